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

namespace mplan::cli {

namespace {

// --- search -------------------------------------------------------------------------------------

struct SearchCliOptions {
  JobArgs job;
  int top = 10, threads = 0;
  std::string objective = "throughput", fix, max, format = "table", out, attention = "flash";
  std::string moe_dispatcher = "alltoall";
  bool moe_force_balance = false;
  bool stats = false, explain = false, allow_tp_nvlink = false, no_prune = false;
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

std::vector<std::string> result_row(size_t rank, const Candidate& c) {
  const ParallelConfig& p = c.plan.parallel;
  const StepReport& r = c.report;
  std::string vpp = std::to_string(p.vpp) + (p.pipeline_layout.empty() ? "" : "*");
  std::string cp = std::to_string(p.cp) + (p.cp > 1 ? " " + to_string(p.cp_comm_type) : "");
  std::string sp = p.sp ? (p.tp_comm_overlap ? "on+ov" : "on") : "off";
  return {std::to_string(rank),
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

int run_search(const SearchCliOptions& o) {
  Plan job = job_skeleton(o.job);
  job.parallel.attention_backend = *parse_attention_backend(o.attention);
  job.parallel.moe_dispatcher = *parse_moe_dispatcher(o.moe_dispatcher);
  job.parallel.moe_force_balance = o.moe_force_balance;
  Calibration cal = load_calibration(o.job.calibration);
  if (!o.job.calibration.empty())
    if (auto w = check_calibration(cal, job.cluster.gpu, o.job.force); !w.empty()) std::cerr << w << "\n";
  SearchOptions so;
  so.top_k = o.top;
  so.threads = o.threads;
  so.objective = o.objective == "memory-headroom" ? Objective::memory_headroom : Objective::throughput;
  so.fix = parse_kv(o.fix, "--fix", true);
  so.max = parse_kv(o.max, "--max", false);
  so.allow_tp_across_nvlink = o.allow_tp_nvlink;
  so.exhaustive = o.no_prune;
  auto progress = std::make_shared<Progress>();
  so.progress = [progress](double f) { (*progress)(f); };
  auto res = search(job, cal, so);
  progress->done();
  if (!res) {
    std::string msg = "search:";
    for (const auto& p : res.error().problems) msg += "\n  - " + p;
    throw InputError{msg};
  }
  const SearchResult& r = *res;
  if (!o.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out, ec);
    if (ec) throw InputError{"--out " + o.out + ": " + ec.message()};
    for (size_t i = 0; i < r.top.size(); ++i) {
      Plan p = r.top[i].plan;
      p.meta = {{"written_by", "mplan search"},
                {"rank", i + 1},
                {"objective", o.objective},
                {"predicted",
                 {{"step_time_s", r.top[i].report.step_time_s},
                  {"tokens_per_s_per_gpu", r.top[i].report.tokens_per_s_per_gpu},
                  {"mfu", r.top[i].report.mfu},
                  {"peak_memory_gib", r.top[i].report.peak_memory_gib}}}};
      char name[32];
      std::snprintf(name, sizeof name, "plan-%02zu.json", i + 1);
      auto st = write_plan_file((std::filesystem::path(o.out) / name).string(), p);
      if (!st.ok()) throw InputError{"--out: " + st.error().message()};
    }
  }
  if (o.format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < r.top.size(); ++i) {
      nlohmann::json j = report_to_json(r.top[i].report);
      j["rank"] = i + 1;
      j["layout"] = parallel_to_json(r.top[i].plan.parallel);
      j["tied_with_best"] = r.top[i].tied_with_best;
      if (r.top[i].tied_with_best) j["separate_by"] = r.top[i].separate_by;
      arr.push_back(std::move(j));
    }
    std::cout << dump_json(arr, 2) << "\n";
    if (o.stats) print_stats(std::cerr, r.stats, o.no_prune);
    return kExitOk;
  }
  if (o.format == "csv") {
    auto h = result_header();
    for (size_t i = 0; i < h.size(); ++i) std::cout << (i ? "," : "") << csv_cell(h[i]);
    std::cout << "\n";
    for (size_t k = 0; k < r.top.size(); ++k) {
      auto row = result_row(k + 1, r.top[k]);
      for (size_t i = 0; i < row.size(); ++i) std::cout << (i ? "," : "") << csv_cell(row[i]);
      std::cout << "\n";
    }
    if (o.stats) print_stats(std::cerr, r.stats, o.no_prune);
    return kExitOk;
  }
  const Plan& any = job;
  std::cout << any.model.name << " on " << any.parallel.world_size << " x " << any.cluster.gpu.name << " (" << any.cluster.name
            << "), global batch " << any.training.global_batch_size << " x seq " << any.training.seq_length << ", "
            << to_string(any.training.precision) << "; best " << o.top << " by " << o.objective << "\n\n";
  TextTable t(result_header());
  for (size_t k = 0; k < r.top.size(); ++k) t.add_row(result_row(k + 1, r.top[k]));
  std::cout << t.render();
  if (!r.top.empty())
    std::cout << "(vpp* = balanced pipeline layout counting the embedding and the loss as layers; pp (F/L) = F layers on the "
                 "first stage, L on the last, the rest even; ep N+ov = EP all-to-alls overlapped with another micro-batch's "
                 "compute (moe_a2a_overlap); tied = its 80% interval overlaps the winner's)\n";
  for (size_t k = 1; k < r.top.size(); ++k)
    if (r.top[k].tied_with_best) std::cout << "  #" << k + 1 << " vs #1: " << r.top[k].separate_by << "\n";
  if (r.top.empty()) {
    std::cout << "\nno layout fits; the most frequent reasons layouts were rejected:\n";
    for (const auto& s : r.top_rejection_reasons) std::cout << "  - " << s << "\n";
  }
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
  if ((o.format == "megatron" && fw != Framework::megatron) || (o.format == "torchtitan" && fw != Framework::torchtitan))
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
    sub->add_option("--top", o->top, "how many layouts to keep (default 10)")->check(int_range(1, 100000));
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
    sub->add_option("--attention", o->attention, "flash|unfused|triton attention kernels of the training code")
        ->check(CLI::IsMember({"flash", "unfused", "triton"}));
    sub->add_option("--moe-dispatcher", o->moe_dispatcher, "MoE token dispatcher alltoall|deepep|hybridep")
        ->check(CLI::IsMember({"alltoall", "deepep", "hybridep"}));
    sub->add_flag("--moe-force-balance", o->moe_force_balance,
                  "forced MoE load balancing (benchmarks); default: learned routing");
    sub->add_flag("--allow-tp-across-nvlink", o->allow_tp_nvlink, "also try tensor-parallel groups spanning NVLink domains");
    sub->add_flag("--no-prune", o->no_prune, "simulate every valid layout (slow; checks the pruning bounds)");
    sub->callback([&run, o] { run = [o] { return run_search(*o); }; });
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
