// `mplan search, explain, export, import`: subcommands over the planner library (search-check, the
// search's quality benchmark, is in cmd_search_check.cpp).
//   search        the best layouts of a job (table|json|csv, --out DIR writes the top K as plan files)
//   explain       why a plan wins or loses against the usual alternatives
//   export        a plan as Megatron-LM arguments, a torchtitan configuration (Python, or a release's TOML) or a
//                 normalised plan file
//   import        exported Megatron-LM arguments back into a plan
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/plan_args.h"
#include "cli/resolve.h"
#include "cli/simulate_output.h"
#include "cli/table.h"
#include "core/json_fields.h"
#include "core/strict_json.h"
#include "planner/constraints.h"
#include "planner/planner.h"
#include "planner/scaling.h"

namespace mplan::cli {

namespace {

// --- search -------------------------------------------------------------------------------------

struct SearchCliOptions {
  JobArgs job;
  std::string gpus;  // one count, a list or a range of powers of two (planner/scaling.h parse_gpu_counts)
  std::string train_tokens;
  double gpu_hour_price = 0;
  ReliabilityParams reliability;
  std::vector<std::string> ttt_flags;  // --gpu-hour-price, --failure-rate ... as given (they need --train-tokens)
  int top = 10, threads = 0;
  std::string objective = "throughput", fix, max, format = "table", out, attention = "flash";
  std::string moe_dispatcher = "alltoall";
  bool moe_force_balance = false;
  bool stats = false, explain = false, allow_tp_nvlink = false, no_prune = false, expand = false;
};

// "tp=8,pp=4,recompute=full" -> key/value map; numbers or the names of choice keys.
std::map<std::string, int> parse_kv(const std::string& text, const char* flag, bool allow_choices) {
  std::map<std::string, int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw InputError{std::string(flag) + ": expected key=value pairs like tp=8,pp=4, got '" + item + "'"};
    std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (out.count(k)) throw InputError{std::string(flag) + ": " + k + " given twice"};
    bool choice = false;
    for (const auto& c : planner::choice_keys()) choice = choice || c == k;
    if (choice) {
      if (!allow_choices) throw InputError{std::string(flag) + " " + k + ": only --fix takes " + k};
      auto code = planner::choice_code(k, v);
      if (!code) throw InputError{std::string(flag) + " " + k + "=" + v + " is not a valid choice"};
      out[k] = *code;
      continue;
    }
    try {
      size_t used = 0;
      int n = std::stoi(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
      out[k] = n;
    } catch (const std::exception&) {
      throw InputError{std::string(flag) + " " + k + "=" + v + ": expected an integer"};
    }
  }
  return out;
}

std::string recompute_name(const ParallelConfig& p) {
  std::string s = to_string(p.recompute);
  if (p.recompute == Recompute::full && p.recompute_num_layers > 0) s += "(" + std::to_string(p.recompute_num_layers) + ")";
  return s;
}

double exposed_comm(const StepReport& r) {
  const TimeBreakdown& t = r.time;
  return t.tp_comm_exposed + t.cp_comm_exposed + t.ep_comm_exposed + t.dp_comm_exposed + t.pp_p2p_exposed;
}

std::vector<std::string> result_header() {
  return {"rank",
          "folded",
          "tp",
          "sp",
          "pp",
          "vpp",
          "dp",
          "cp",
          "ep",
          "etp",
          "zero",
          "mbs",
          "recompute",
          "schedule",
          "step time s",
          "80% interval s",
          "tokens/s/GPU",
          "MFU",
          "peak memory / capacity GiB",
          "bubble %",
          "exposed comm %"};
}

// `rank` is the group's ("3") or a member's ("3.2"); `folded` how many members the group's best stands for.
std::vector<std::string> result_row(const std::string& rank, const std::string& folded, const Candidate& c) {
  const ParallelConfig& p = c.plan.parallel;
  const StepReport& r = c.report;
  std::string vpp = std::to_string(p.vpp) + (p.pipeline_layout.empty() ? "" : "*");
  std::string cp = std::to_string(p.cp) + (p.cp > 1 ? " " + to_string(p.cp_comm_type) : "");
  std::string sp = p.sp ? (p.tp_comm_overlap ? "on+ov" : "on") : "off";
  return {rank,
          folded,
          std::to_string(p.tp),
          sp,
          std::to_string(p.pp) + (p.num_layers_in_first_pipeline_stage || p.num_layers_in_last_pipeline_stage
                                      ? " (" + std::to_string(p.num_layers_in_first_pipeline_stage) + "/" +
                                            std::to_string(p.num_layers_in_last_pipeline_stage) + ")"
                                      : ""),
          vpp,
          std::to_string(p.dp()),
          cp,
          std::to_string(p.ep) + (p.moe_a2a_overlap ? "+ov" : ""),
          std::to_string(p.etp),
          std::to_string(p.zero),
          std::to_string(p.micro_batch_size),
          recompute_name(p),
          to_string(p.schedule),
          fmt(r.step_time_s, 3),
          r.step_time_s_interval.second > 0 ? fmt(r.step_time_s_interval.first, 3) + "-" + fmt(r.step_time_s_interval.second, 3) +
                                                  (c.tied_with_best ? " tied" : "")
                                            : "-",
          fmt(r.tokens_per_s_per_gpu, 0),
          fmt_pct(r.mfu),
          fmt(r.peak_memory_gib, 1) + " / " + fmt(r.capacity_gib, 0),
          fmt(100 * r.bubble_fraction, 1),
          fmt(r.step_time_s > 0 ? 100 * exposed_comm(r) / r.step_time_s : 0, 1)};
}

// The rows of the table and the CSV: each group's best with the number of layouts folded into it, and with
// --expand the members below it.
std::vector<std::vector<std::string>> result_rows(const SearchResult& r, bool expand) {
  std::vector<std::vector<std::string>> rows;
  for (size_t g = 0; g < r.top.size(); ++g) {
    const size_t n = g < r.folded.size() ? r.folded[g].size() : 0;
    rows.push_back(result_row(std::to_string(g + 1), n ? "+" + std::to_string(n) : "", r.top[g]));
    if (!expand) continue;
    for (size_t m = 0; m < n; ++m)
      rows.push_back(result_row(std::to_string(g + 1) + "." + std::to_string(m + 2), "", r.folded[g][m]));
  }
  return rows;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char ch : s) o += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return o + "\"";
}

void print_stats(std::ostream& o, const SearchStats& s, bool audit) {
  o << "search statistics:\n";
  TextTable t({"count", "layouts"});
  t.add_row({"enumerated", std::to_string(s.enumerated)});
  t.add_row({"rejected by a rule", std::to_string(s.rejected)});
  for (const auto& [rule, n] : s.rejected_by_rule) t.add_row({"  " + rule, std::to_string(n)});
  t.add_row({"pruned: does not fit (memory bound)", std::to_string(s.pruned_memory)});
  t.add_row({"pruned: cannot beat the top K (time bound)", std::to_string(s.pruned_by_bound)});
  t.add_row({"fully simulated", std::to_string(s.simulated)});
  t.add_row({"  of which fit", std::to_string(s.fits)});
  t.add_row({"structures (tp pp vpp split cp dp ep etp mbs)", std::to_string(s.structures)});
  t.add_row({"per-layer cost probes", std::to_string(s.probes)});
  if (audit) t.add_row({"bounds above the simulation (--no-prune audit; must be 0)", std::to_string(s.bound_violations)});
  o << t.render() << "wall time " << fmt(s.wall_s, 3) << " s\n";
}

// Progress on stderr once the search has run for a second.
struct Progress {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last{};
  std::mutex mu;
  bool shown = false;
  void operator()(double f) {
    std::lock_guard<std::mutex> lock(mu);
    auto now = std::chrono::steady_clock::now();
    if (now - start < std::chrono::seconds(1) || now - last < std::chrono::milliseconds(200)) return;
    last = now;
    if (!isatty(2)) return;
    shown = true;
    std::cerr << "\rsearching: " << int(std::lround(100 * std::clamp(f, 0.0, 1.0))) << "% of the candidate structures"
              << std::flush;
  }
  void done() {
    if (shown) std::cerr << "\r" << std::string(50, ' ') << "\r" << std::flush;
  }
};

SearchOptions search_options(const SearchCliOptions& o) {
  SearchOptions so;
  so.top_k = o.top;
  so.threads = o.threads;
  so.objective = o.objective == "memory-headroom" ? Objective::memory_headroom : Objective::throughput;
  so.fix = parse_kv(o.fix, "--fix", true);
  so.max = parse_kv(o.max, "--max", false);
  so.allow_tp_across_nvlink = o.allow_tp_nvlink;
  so.exhaustive = o.no_prune;
  return so;
}

// Writes the best of each group as DIR/plan-01.json ... (mplan.plan/1 with the prediction in meta).
void write_plans(const std::string& dir, const SearchResult& r, const std::string& objective) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError{"--out " + dir + ": " + ec.message()};
  for (size_t i = 0; i < r.top.size(); ++i) {
    Plan p = r.top[i].plan;
    p.meta = {{"written_by", "mplan search"},
              {"rank", i + 1},
              {"objective", objective},
              {"predicted",
               {{"step_time_s", r.top[i].report.step_time_s},
                {"tokens_per_s_per_gpu", r.top[i].report.tokens_per_s_per_gpu},
                {"mfu", r.top[i].report.mfu},
                {"peak_memory_gib", r.top[i].report.peak_memory_gib}}}};
    char name[32];
    std::snprintf(name, sizeof name, "plan-%02zu.json", i + 1);
    auto st = write_plan_file((std::filesystem::path(dir) / name).string(), p);
    if (!st.ok()) throw InputError{"--out: " + st.error().message()};
  }
}

// every row with its group: rank = the group's rank, group_member 1 = its best, 2... = the folded members
nlohmann::json results_json(const SearchResult& r) {
  nlohmann::json arr = nlohmann::json::array();
  for (size_t i = 0; i < r.top.size(); ++i) {
    const std::vector<Candidate> none;
    const std::vector<Candidate>& members = i < r.folded.size() ? r.folded[i] : none;
    for (size_t m = 0; m <= members.size(); ++m) {
      const Candidate& c = m == 0 ? r.top[i] : members[m - 1];
      nlohmann::json j = report_to_json(c.report);
      j["rank"] = i + 1;
      j["group_member"] = m + 1;
      j["group_size"] = members.size() + 1;
      j["layout"] = parallel_to_json(c.plan.parallel);
      j["tied_with_best"] = c.tied_with_best;
      if (c.tied_with_best) j["separate_by"] = c.separate_by;
      arr.push_back(std::move(j));
    }
  }
  return arr;
}

void print_csv(const SearchResult& r, bool expand) {
  auto h = result_header();
  for (size_t i = 0; i < h.size(); ++i) std::cout << (i ? "," : "") << csv_cell(h[i]);
  std::cout << "\n";
  for (const auto& row : result_rows(r, expand)) {
    for (size_t i = 0; i < row.size(); ++i) std::cout << (i ? "," : "") << csv_cell(row[i]);
    std::cout << "\n";
  }
}

void print_table(const SearchCliOptions& o, const Plan& job, const SearchResult& r) {
  std::cout << job.model.name << " on " << job.parallel.world_size << " x " << job.cluster.gpu.name << " (" << job.cluster.name
            << "), global batch " << job.training.global_batch_size << " x seq " << job.training.seq_length << ", "
            << to_string(job.training.precision) << "; best " << o.top << " by " << o.objective << "\n\n";
  TextTable t(result_header());
  for (auto& row : result_rows(r, o.expand)) t.add_row(std::move(row));
  std::cout << t.render();
  if (!r.top.empty())
    std::cout << "(vpp* = balanced pipeline layout counting the embedding and the loss as layers; pp (F/L) = F layers on the "
                 "first stage, L on the last, the rest even; ep N+ov = EP all-to-alls overlapped with another micro-batch's "
                 "compute (moe_a2a_overlap); tied = its 80% interval overlaps the winner's; folded +N = N more layouts that "
                 "differ only in vpp, the pipeline split or the overlap flags and whose 80% interval overlaps this one's: "
                 "--expand lists them)\n";
  for (size_t k = 1; k < r.top.size(); ++k)
    if (r.top[k].tied_with_best) std::cout << "  #" << k + 1 << " vs #1: " << r.top[k].separate_by << "\n";
  if (r.top.empty()) {
    std::cout << "\nno layout fits; the most frequent reasons layouts were rejected:\n";
    for (const auto& s : r.top_rejection_reasons) std::cout << "  - " << s << "\n";
  }
}

[[noreturn]] void throw_search_error(const Error& e) {
  std::string msg = "search:";
  for (const auto& p : e.problems) msg += "\n  - " + p;
  throw InputError{msg};
}

int run_search_one(const SearchCliOptions& o, const Plan& job, const Calibration& cal) {
  SearchOptions so = search_options(o);
  auto progress = std::make_shared<Progress>();
  so.progress = [progress](double f) { (*progress)(f); };
  auto res = search(job, cal, so);
  progress->done();
  if (!res) throw_search_error(res.error());
  const SearchResult& r = *res;
  if (!o.out.empty()) write_plans(o.out, r, o.objective);
  if (o.format == "json" || o.format == "csv") {
    if (o.format == "json")
      std::cout << dump_json(results_json(r), 2) << "\n";
    else
      print_csv(r, o.expand);
    if (o.stats) print_stats(std::cerr, r.stats, o.no_prune);
    return kExitOk;
  }
  print_table(o, job, r);
  if (o.stats) {
    std::cout << "\n";
    print_stats(std::cout, r.stats, o.no_prune);
  }
  if (o.explain && !r.top.empty()) {
    auto ex = explain_search(r, cal);
    if (!ex) throw InputError{ex.error().message()};
    std::cout << "\n" << *ex;
  }
  if (!o.out.empty()) std::cout << "\nwrote " << r.top.size() << " plan files to " << o.out << "\n";
  return kExitOk;
}

// --- scaling: several GPU counts, time to train -----------------------------------------------------

// "tp8 sp pp16 vpp8 dp128 zero1 mbs1" (cp, ep, etp, recompute and the schedule when they are not the default)
std::string layout_text(const ParallelConfig& p) {
  std::string s = "tp" + std::to_string(p.tp) + (p.sp ? " sp" : "") + " pp" + std::to_string(p.pp);
  if (p.vpp > 1) s += " vpp" + std::to_string(p.vpp);
  if (p.cp > 1) s += " cp" + std::to_string(p.cp);
  if (p.ep > 1) s += " ep" + std::to_string(p.ep);
  if (p.etp > 1) s += " etp" + std::to_string(p.etp);
  s += " dp" + std::to_string(p.dp()) + " zero" + std::to_string(p.zero) + " mbs" + std::to_string(p.micro_batch_size);
  if (p.recompute != Recompute::none) s += " " + recompute_name(p);
  if (p.schedule == Schedule::zero_bubble) s += " zb";
  return s;
}

std::string duration_text(double s) {
  if (s < 120) return fmt(s, 0) + " s";
  if (s < 7200) return fmt(s / 60, 0) + " min";
  return fmt(s / 3600, 1) + " h";
}

struct ScaleRow {
  int gpus = 0;
  const Candidate* best = nullptr;  // null: nothing fits
  double tokens_per_s = 0, efficiency = 0;
  std::optional<TimeToTrain> ttt;
};

std::vector<ScaleRow> scale_rows(const SearchCliOptions& o, const Plan& job, const std::vector<ScalePoint>& pts, double tokens) {
  std::vector<ScaleRow> rows;
  double base = 0;  // tokens/s/GPU of the smallest count that fits
  for (const ScalePoint& pt : pts) {
    ScaleRow row;
    row.gpus = pt.gpus;
    if (!pt.result.top.empty()) {
      row.best = &pt.result.top.front();
      const StepReport& r = row.best->report;
      row.tokens_per_s = r.tokens_per_s_per_gpu * pt.gpus;
      if (base == 0) base = r.tokens_per_s_per_gpu;
      row.efficiency = base > 0 ? r.tokens_per_s_per_gpu / base : 0;
      if (tokens > 0) {
        Plan p = job;
        p.parallel = row.best->plan.parallel;
        row.ttt = time_to_train(p, r, tokens, o.reliability, o.gpu_hour_price);
      }
    }
    rows.push_back(row);
  }
  return rows;
}

void print_scaling(const SearchCliOptions& o, const std::vector<ScaleRow>& rows, double tokens) {
  std::vector<std::string> h = {"GPUs", "best layout", "step time s", "tokens/s", "tokens/s/GPU", "MFU", "scaling eff."};
  if (tokens > 0) {
    for (const char* c : {"ideal days", "expected days", "goodput", "checkpoint GiB", "checkpoint every", "GPU-hours"})
      h.emplace_back(c);
    if (o.gpu_hour_price > 0) h.emplace_back("cost");
  }
  TextTable t(h);
  for (const ScaleRow& row : rows) {
    if (!row.best) {
      std::vector<std::string> cells(h.size(), "-");
      cells[0] = std::to_string(row.gpus);
      cells[1] = "no layout fits";
      t.add_row(cells);
      continue;
    }
    const StepReport& r = row.best->report;
    std::vector<std::string> cells = {std::to_string(row.gpus),    layout_text(row.best->plan.parallel), fmt(r.step_time_s, 3),
                                      fmt_count(row.tokens_per_s), fmt(r.tokens_per_s_per_gpu, 0),       fmt_pct(r.mfu),
                                      fmt_pct(row.efficiency, 0)};
    if (row.ttt) {
      const TimeToTrain& x = *row.ttt;
      cells.push_back(fmt(x.ideal_s / 86400, 1));
      cells.push_back(fmt(x.expected_s / 86400, 1));
      cells.push_back(fmt_pct(x.goodput));
      cells.push_back(fmt(x.checkpoint_bytes / (1024.0 * 1024 * 1024), 0));
      cells.push_back(x.interval_steps > 0 ? duration_text(x.interval_s) + " (" + std::to_string(x.interval_steps) + " steps)"
                                           : "-");
      cells.push_back(fmt_count(x.gpu_hours));
      if (o.gpu_hour_price > 0) cells.push_back(fmt_count(x.cost));
    }
    t.add_row(cells);
  }
  std::cout << "scaling: the best layout of each GPU count";
  if (tokens > 0) std::cout << ", " << fmt_count(tokens) << " tokens";
  std::cout << "\n" << t.render();
  if (tokens > 0) {
    const ReliabilityParams& rel = o.reliability;
    std::cout << "(expected days: Daly's model with " << fmt(rel.failures_per_gpu_day * 1e4, 2)
              << " interruptions per 10,000 GPU-days (--failure-rate), " << fmt(rel.restart_s, 0)
              << " s per restart (--restart-s), checkpoints of the plan's weights and optimizer states written at "
              << fmt(rel.ckpt_write_gbps, 0)
              << " GB/s (--ckpt-write-gbps) every Young/Daly interval; goodput = ideal / expected; GPU-hours and cost over "
                 "the expected days)\n";
  }
}

nlohmann::json scaling_json(const std::vector<ScaleRow>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  for (const ScaleRow& row : rows) {
    nlohmann::json j = {{"gpus", row.gpus}, {"fits", row.best != nullptr}};
    if (row.best) {
      const StepReport& r = row.best->report;
      j["layout"] = parallel_to_json(row.best->plan.parallel);
      j["step_time_s"] = r.step_time_s;
      j["tokens_per_s"] = row.tokens_per_s;
      j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
      j["mfu"] = r.mfu;
      j["scaling_efficiency"] = row.efficiency;
    }
    if (row.ttt) {
      const TimeToTrain& x = *row.ttt;
      j["time_to_train"] = {{"steps", x.steps},
                            {"ideal_days", x.ideal_s / 86400},
                            {"expected_days", x.expected_s / 86400},
                            {"goodput", x.goodput},
                            {"checkpoint_bytes", x.checkpoint_bytes},
                            {"checkpoint_write_s", x.checkpoint_write_s},
                            {"mtbf_s", x.mtbf_s},
                            {"checkpoint_interval_s", x.interval_s},
                            {"checkpoint_interval_steps", x.interval_steps},
                            {"gpu_hours", x.gpu_hours},
                            {"cost", x.cost}};
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

int run_search_sweep(const SearchCliOptions& o, const Plan& job, const Calibration& cal, const std::vector<int>& counts,
                     double tokens) {
  SearchOptions so = search_options(o);
  auto progress = std::make_shared<Progress>();
  so.progress = [progress](double f) { (*progress)(f); };
  auto pts = search_scaling(job, counts, cal, so);
  progress->done();
  if (!pts) throw_search_error(pts.error());
  if (!o.out.empty())
    for (const ScalePoint& pt : *pts)
      write_plans((std::filesystem::path(o.out) / ("gpus-" + std::to_string(pt.gpus))).string(), pt.result, o.objective);
  const std::vector<ScaleRow> rows = scale_rows(o, job, *pts, tokens);
  if (o.format == "json") {
    nlohmann::json searches = nlohmann::json::array();
    for (const ScalePoint& pt : *pts) searches.push_back({{"gpus", pt.gpus}, {"results", results_json(pt.result)}});
    std::cout << dump_json(nlohmann::json{{"scaling", scaling_json(rows)}, {"searches", searches}}, 2) << "\n";
    return kExitOk;
  }
  if (o.format == "csv") {  // the curve
    std::cout << "gpus,step_time_s,tokens_per_s,mfu,ideal_days,expected_days,goodput,checkpoint_interval_s,gpu_hours,cost\n";
    for (const ScaleRow& r : rows) {
      std::cout << r.gpus;
      if (r.best) {
        std::cout << "," << r.best->report.step_time_s << "," << r.tokens_per_s << "," << r.best->report.mfu;
        if (r.ttt)
          std::cout << "," << r.ttt->ideal_s / 86400 << "," << r.ttt->expected_s / 86400 << "," << r.ttt->goodput << ","
                    << r.ttt->interval_s << "," << r.ttt->gpu_hours << "," << r.ttt->cost;
        else
          std::cout << ",,,,,,";
      } else {
        std::cout << ",,,,,,,,,";
      }
      std::cout << "\n";
    }
    return kExitOk;
  }
  for (const ScalePoint& pt : *pts) {
    Plan j = job;
    j.parallel.world_size = pt.gpus;
    print_table(o, j, pt.result);
    if (o.stats) {
      std::cout << "\n";
      print_stats(std::cout, pt.result.stats, o.no_prune);
    }
    std::cout << "\n";
  }
  print_scaling(o, rows, tokens);
  if (!o.out.empty()) std::cout << "\nwrote the plan files of each GPU count to " << o.out << "/gpus-N/\n";
  return kExitOk;
}

int run_search(const SearchCliOptions& o) {
  JobArgs ja = o.job;
  ja.gpus = 1;  // the counts of --gpus are read below, against the cluster
  Plan job = job_skeleton(ja);
  job.parallel.attention_backend = *parse_enum<AttentionBackend>(o.attention);
  job.parallel.moe_dispatcher = *parse_enum<MoeDispatcher>(o.moe_dispatcher);
  job.parallel.moe_force_balance = o.moe_force_balance;
  auto counts = parse_gpu_counts(o.gpus, "--gpus", std::min(job.cluster.max_gpus(), int(kMaxGpus)));
  if (!counts) throw InputError{counts.error().message()};
  double tokens = 0;
  if (!o.train_tokens.empty()) {
    auto t = parse_token_count(o.train_tokens, "--train-tokens");
    if (!t) throw InputError{t.error().message()};
    tokens = *t;
  }
  if (tokens == 0 && !o.ttt_flags.empty())
    throw InputError{o.ttt_flags.front() + " applies to the time to train: give --train-tokens N (e.g. 15T) too"};
  if (o.expand && (o.format == "json")) throw InputError{"--expand applies to --format table|csv (json lists every layout)"};
  Calibration cal = load_calibration(o.job.calibration);
  if (!o.job.calibration.empty())
    if (auto w = check_calibration(cal, job.cluster.gpu, o.job.force); !w.empty()) std::cerr << w << "\n";
  if (counts->size() == 1 && tokens == 0) {
    job.parallel.world_size = counts->front();
    return run_search_one(o, job, cal);
  }
  return run_search_sweep(o, job, cal, *counts, tokens);
}

// --- explain / export ---------------------------------------------------------------------------

struct ExplainCliOptions {
  std::string plan, calibration;
  bool force = false;
};

int run_explain(const ExplainCliOptions& o) {
  Plan plan = require_plan(o.plan);
  Calibration cal = load_calibration(o.calibration);
  if (!o.calibration.empty())
    if (auto w = check_calibration(cal, plan.cluster.gpu, o.force); !w.empty()) std::cerr << w << "\n";
  auto text = explain_plan(plan, cal);
  if (!text) throw InputError{text.error().message()};
  std::cout << *text;
  return kExitOk;
}

struct ExportCliOptions {
  std::string plan, format = "megatron", out, torchtitan_version;
};

int run_export(const ExportCliOptions& o) {
  if (!o.torchtitan_version.empty() && o.format != "torchtitan")
    throw InputError{"--torchtitan-version applies to --format torchtitan only (got --format " + o.format + ")"};
  Plan plan = require_plan(o.plan);
  std::string text;
  // an exporter writes its own framework's configuration: a plan costed for another framework is refused
  const Framework fw = plan.training.framework;
  if ((o.format == "megatron" || o.format == "torchtitan") && to_string(fw) != o.format)
    throw InputError{"--format " + o.format + ": the plan is for framework '" + to_string(fw) + "' (plan.framework); " +
                     o.format +
                     " arguments would run a layout costed for another framework. Export with --format plan, "
                     "or plan the job with --framework " +
                     (o.format == "megatron" ? std::string("megatron") : std::string("torchtitan"))};
  if (o.format == "megatron") {
    text = export_megatron_args(plan);
  } else if (o.format == "torchtitan") {
    auto v = parse_torchtitan_version(o.torchtitan_version);
    if (!v)
      throw InputError{"--torchtitan-version: '" + o.torchtitan_version +
                       "' is not a torchtitan release mplan writes for; use "
                       "current (the Python configuration, the default), 0.2 (the v0.2.x TOML) or 0.1 (the v0.1 TOML)"};
    auto t = *v == TorchtitanVersion::current ? export_torchtitan_config(plan) : export_torchtitan_toml(plan, *v);
    if (!t) {
      std::string msg = "this layout cannot be exported to torchtitan:";
      for (const auto& p : t.error().problems) msg += "\n  - " + p;
      throw InputError{msg};
    }
    text = *t;
  } else {
    text = dump_json(plan_to_json(plan), 2) + "\n";
  }
  if (o.out.empty()) {
    std::cout << text;
  } else {
    std::string err = write_text_file_atomic(o.out, text);
    if (!err.empty()) throw InputError{"--out: " + err};
    std::cout << "wrote " << o.out << "\n";
  }
  return kExitOk;
}

// --- import --megatron-args: an exported argument file back into a plan ----------------------------

struct ImportCliOptions {
  std::string megatron_args, cluster, out;
  int gpus = 0;
};

int run_import(const ImportCliOptions& o) {
  std::vector<std::string> problems;
  auto text = read_text_file(o.megatron_args, problems);
  if (!text) throw InputError{"--megatron-args: " + (problems.empty() ? std::string("unreadable") : problems.front())};
  auto cluster = resolve_cluster(o.cluster);
  if (!cluster) throw InputError{"--cluster: " + cluster.error().message()};
  auto plan = import_megatron_plan(*text, *cluster, o.gpus);
  if (!plan) throw InputError{"--megatron-args " + o.megatron_args + ": " + plan.error().message()};
  std::string out = dump_json(plan_to_json(*plan), 2) + "\n";
  if (o.out.empty()) {
    std::cout << out;
  } else {
    std::string err = write_text_file_atomic(o.out, out);
    if (!err.empty()) throw InputError{"--out: " + err};
    std::cout << "wrote " << o.out << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_search_commands(CLI::App& app, Runner& run) {
  {
    auto o = std::make_shared<SearchCliOptions>();
    auto* sub = app.add_subcommand("search", "Search every layout of a job and rank those that fit");
    add_job_options(sub, o->job, true);
    // search alone takes several GPU counts: --gpus is replaced by its text form
    sub->remove_option(sub->get_option("--gpus"));
    sub->add_option("--gpus", o->gpus,
                    "GPU count, a list 256,512,1024 or a range of powers of two 256..4096 (ranks each and prints the "
                    "scaling curve)")
        ->required();
    sub->add_option("--train-tokens", o->train_tokens,
                    "token budget of the whole run, e.g. 15T or 300B: days to train (ideal and with interruptions and "
                    "checkpoints) and GPU-hours per GPU count");
    sub->add_option("--gpu-hour-price", o->gpu_hour_price, "price of one GPU-hour (with --train-tokens: the cost)")
        ->check(real_range(0, 1e6, true));
    sub->add_option("--failure-rate", o->reliability.failures_per_gpu_day,
                    "unexpected interruptions per GPU per day (default 4.74e-4: Llama 3, 419 in 54 days on 16,384 H100)")
        ->check(real_range(0, 1));
    sub->add_option("--restart-s", o->reliability.restart_s,
                    "seconds from an interruption to training again (default 600: the setup budget of NVIDIA's "
                    "fault-tolerance launcher)")
        ->check(real_range(0, 1e6));
    sub->add_option("--ckpt-write-gbps", o->reliability.ckpt_write_gbps,
                    "aggregate checkpoint write bandwidth, GB/s (default 2000: Llama 3's Tectonic storage, 2 TB/s)")
        ->check(real_range(0, 1e6, true));
    sub->add_option("--top", o->top, "how many distinct layouts to keep (default 10; refinements of one are folded into it)")
        ->check(int_range(1, 100000));
    sub->add_option("--objective", o->objective, "throughput|memory-headroom")
        ->check(CLI::IsMember({"throughput", "memory-headroom"}));
    sub->add_option("--fix", o->fix,
                    "fixed choices, e.g. tp=8,pp=4 (keys tp pp vpp cp ep etp dp mbs zero recompute_layers, and sp=on|off, "
                    "tp_comm_overlap=on|off, recompute=none|selective|full, schedule=gpipe|1f1b|interleaved|zb, "
                    "cp_comm=p2p|a2a|allgather, moe_a2a_overlap=on|off)");
    sub->add_option("--max", o->max, "upper limits, e.g. tp=8,pp=32 (keys tp pp vpp cp ep etp dp mbs zero recompute_layers)");
    sub->add_option("--threads", o->threads, "worker threads (default: all cores)")->check(int_range(0, 4096));
    sub->add_flag("--stats", o->stats, "print how many layouts were enumerated, rejected, pruned and simulated");
    sub->add_option("--format", o->format, "table|json|csv")->check(format_choice({"table", "json", "csv"}));
    sub->add_option("--out", o->out, "write the top layouts as mplan.plan/1 files into this directory");
    sub->add_flag("--explain", o->explain, "explain why the winner won");
    sub->add_flag("--expand", o->expand,
                  "also list the layouts folded into each result (same structure, differing only in vpp, the pipeline "
                  "split or the overlap flags, 80% interval overlapping)");
    sub->add_option("--attention", o->attention, "flash|unfused|triton attention kernels of the training code")
        ->check(CLI::IsMember({"flash", "unfused", "triton"}));
    sub->add_option("--moe-dispatcher", o->moe_dispatcher, "MoE token dispatcher alltoall|deepep|hybridep")
        ->check(CLI::IsMember({"alltoall", "deepep", "hybridep"}));
    sub->add_flag("--moe-force-balance", o->moe_force_balance,
                  "forced MoE load balancing (benchmarks); default: learned routing");
    sub->add_flag("--allow-tp-across-nvlink", o->allow_tp_nvlink, "also try tensor-parallel groups spanning NVLink domains");
    sub->add_flag("--no-prune", o->no_prune, "simulate every valid layout (slow; checks the pruning bounds)");
    sub->callback([&run, o, sub] {
      for (const char* f : {"--gpu-hour-price", "--failure-rate", "--restart-s", "--ckpt-write-gbps"})
        if (sub->count(f) > 0) o->ttt_flags.emplace_back(f);
      run = [o] { return run_search(*o); };
    });
  }
  {
    auto o = std::make_shared<ExplainCliOptions>();
    auto* sub = app.add_subcommand("explain", "Explain why a plan wins or loses against the usual alternatives");
    sub->add_option("--plan", o->plan, "mplan.plan/1 file")->required();
    sub->add_option("--calibration", o->calibration, "calibration JSON (mplan.calibration/1)");
    add_force_option(sub, o->force);
    sub->callback([&run, o] { run = [o] { return run_explain(*o); }; });
  }
  {
    auto o = std::make_shared<ExportCliOptions>();
    auto* sub = app.add_subcommand("export", "Export a plan as Megatron-LM arguments, a torchtitan configuration or a plan file");
    sub->add_option("--plan", o->plan, "mplan.plan/1 file")->required();
    sub->add_option("--format", o->format, "megatron|torchtitan|plan")->check(format_choice({"megatron", "torchtitan", "plan"}));
    sub->add_option("--torchtitan-version", o->torchtitan_version,
                    "torchtitan release: current (default; a Python config module for --module/--config), 0.2 (v0.2.x TOML), "
                    "0.1 (v0.1 TOML)");
    sub->add_option("--out", o->out, "write to this file instead of stdout");
    sub->callback([&run, o] { run = [o] { return run_export(*o); }; });
  }
  {
    auto o = std::make_shared<ImportCliOptions>();
    auto* sub = app.add_subcommand("import", "Read exported Megatron-LM arguments back into a plan file");
    sub->add_option("--megatron-args", o->megatron_args, "a file written by mplan export --format megatron")->required();
    sub->add_option("--cluster", o->cluster, "cluster preset or JSON file the plan runs on")->required();
    sub->add_option("--gpus", o->gpus, "GPU count (default: the WORLD_SIZE in the file's header)");
    sub->add_option("--out", o->out, "write the plan to this file instead of stdout");
    sub->callback([&run, o] { run = [o] { return run_import(*o); }; });
  }
}

}  // namespace mplan::cli
