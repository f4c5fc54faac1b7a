// CSV import for frameworks other than Megatron-LM: one row per logged step, columns by name.
// Metrics are recomputed from step time and the plan so every source shares one FLOP convention;
// the file's own throughput is kept as reported_tflops_per_gpu and its MFU only cross-checked.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/csv.h"
#include "core/stats.h"
#include "runs/import.h"
#include "runs/warmup.h"

namespace mplan::runs {

using stats::median;

namespace {

const std::vector<std::string> kColumns = {"step", "step_time_s",     "tokens_per_s", "tflops_per_gpu",
                                           "mfu",  "peak_memory_gib", "loss"};

std::string lower_trim(std::string s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  s = s.substr(b, e - b);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One data row: its line number and the numeric cells of the columns mplan reads.
struct Row {
  int line;
  std::map<std::string, double> v;
};

struct CsvRows {
  std::vector<Row> rows;
  std::vector<std::string> warnings;  // ignored columns
};

// Header -> column indices; problems when the required columns are missing.
std::map<std::string, size_t> read_header(const std::vector<std::string>& cells, const std::string& where,
                                          std::vector<std::string>& warnings, std::vector<std::string>& problems) {
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string c = lower_trim(cells[i]);
    if (std::find(kColumns.begin(), kColumns.end(), c) != kColumns.end())
      col[c] = i;
    else
      warnings.push_back(where + ": column '" + c + "' is not one mplan reads; ignored");
  }
  if (!col.count("step")) problems.push_back(where + ": header has no 'step' column");
  if (!col.count("step_time_s") && !col.count("tokens_per_s"))
    problems.push_back(where + ": header needs 'step_time_s' or 'tokens_per_s'");
  if (!problems.empty())
    problems.push_back(
        "expected a header row naming columns among: step, step_time_s, tokens_per_s, "
        "tflops_per_gpu, mfu, peak_memory_gib, loss (see docs/runs.md)");
  return col;
}

Row read_row(const std::vector<std::string>& cells, const std::map<std::string, size_t>& col, int n, const std::string& where,
             std::vector<std::string>& problems) {
  Row r{n, {}};
  for (const auto& [c, i] : col) {
    if (i >= cells.size() || lower_trim(cells[i]).empty()) continue;
    std::string cell = lower_trim(cells[i]);
    char* end = nullptr;
    double v = std::strtod(cell.c_str(), &end);
    if (end == cell.c_str() || *end != '\0' || !std::isfinite(v)) {
      problems.push_back(where + ": column " + c + ": '" + cell + "' is not a number");
      continue;
    }
    r.v[c] = v;
  }
  if (!r.v.count("step"))
    problems.push_back(where + ": the step is empty");
  else if (r.v["step"] < 0 || r.v["step"] > 1e9 || r.v["step"] != std::floor(r.v["step"]))
    problems.push_back(where + ": step " + cells[col.at("step")] + " is not a whole number in 0..1000000000");
  else if (!r.v.count("step_time_s") && !r.v.count("tokens_per_s"))
    problems.push_back(where + ": needs step_time_s or tokens_per_s");
  else if (r.v.count("step_time_s") ? r.v["step_time_s"] <= 0 : r.v["tokens_per_s"] <= 0)
    problems.push_back(where + ": step_time_s / tokens_per_s must be > 0");
  if (r.v.count("mfu") && (r.v["mfu"] < 0 || r.v["mfu"] > 1))
    problems.push_back(where + ": mfu " + cells[col.at("mfu")] + " is not a fraction in 0..1 (write 0.42 for 42%)");
  return r;
}

Expected<CsvRows> read_csv_rows(const std::string& text, const std::string& name) {
  CsvRows out;
  csv::Options copt;
  copt.comment = '#';
  auto records = csv::parse(text, name, copt);
  if (!records) return records.error();
  std::map<std::string, size_t> col;
  std::vector<std::string> problems;
  for (const csv::Record& rec : *records) {
    const std::vector<std::string>& cells = rec.fields;
    std::string where = name + ":" + std::to_string(rec.line);
    if (col.empty()) {
      col = read_header(cells, where, out.warnings, problems);
      if (!problems.empty()) return Error(problems);
      continue;
    }
    out.rows.push_back(read_row(cells, col, rec.line, where, problems));
  }
  if (col.empty())
    problems.push_back(name + ": empty CSV; expected a header row and one row per step");
  else if (out.rows.empty() && problems.empty())
    problems.push_back(name + ": no data rows after the header");
  if (!problems.empty()) return Error(problems);
  return out;
}

}  // namespace

Expected<ImportResult> import_csv(const std::string& text, const std::string& name, const Plan& plan, const ImportOptions& opt) {
  auto peak = plan_peak_tflops(plan);
  if (!peak) return peak.error();
  auto parsed = read_csv_rows(text, name);
  if (!parsed) return parsed.error();
  std::vector<Row>& rows = parsed.value().rows;
  ImportResult res;
  RunRecord& run = res.run;
  run.plan = plan_to_json(plan);
  run.plan_key = plan_key(run.plan);
  run.source = "csv";
  run.warnings = parsed.value().warnings;
  res.format = "csv";
  res.framework = "csv";

  std::vector<int64_t> iters;
  iters.reserve(rows.size());
  for (const auto& r : rows) iters.push_back(static_cast<int64_t>(r.v.at("step")));
  WarmupFlags wf = flag_warmup(iters, opt.warmup_iters);
  for (auto r : wf.restarts)
    run.warnings.push_back("the steps restart at " + std::to_string(r) + "; warm-up is applied again after it");
  const double gbs = static_cast<double>(plan.training.global_batch_size);
  const double tokens_per_step = gbs * static_cast<double>(plan.training.seq_length);
  const double flops = plan_flops_per_step(plan, plan.training.global_batch_size);
  std::vector<double> mfu_ratio;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto& v = rows[i].v;
    StepMetric m;
    m.step = static_cast<int>(iters[i]);
    m.step_time_s = v.count("step_time_s") ? v["step_time_s"] : tokens_per_step / v["tokens_per_s"];
    m.tokens_per_s = tokens_per_step / m.step_time_s;
    m.tflops_per_gpu = flops / m.step_time_s / plan.parallel.world_size / 1e12;
    m.mfu = m.tflops_per_gpu / peak.value();
    if (v.count("loss")) m.loss = v["loss"];
    if (v.count("peak_memory_gib")) m.peak_memory_gib = v["peak_memory_gib"];
    if (v.count("tflops_per_gpu")) m.reported_tflops_per_gpu = v["tflops_per_gpu"];
    m.warmup = wf.warmup[i];
    if (m.warmup)
      ++res.warmup_excluded;
    else if (v.count("mfu") && v["mfu"] > 0)
      mfu_ratio.push_back(v["mfu"] / m.mfu);
    run.steps.push_back(m);
  }
  if (res.warmup_excluded == static_cast<int>(run.steps.size()))
    return Error(name + ": all " + std::to_string(rows.size()) + " rows fall in the warm-up (" +
                 warmup_rule_text(opt.warmup_iters) + "); pass a smaller --warmup");
  if (!mfu_ratio.empty()) {
    double r = median(mfu_ratio);
    if (std::fabs(r - 1) > 0.05)
      run.warnings.push_back(name + ": the file's mfu is " + std::to_string(r).substr(0, 4) +
                             "x the MFU mplan computes from step_time_s and the plan (Megatron-LM FLOPs, causal "
                             "attention, dense " +
                             std::string(to_string(plan.training.precision)) + " peak); mplan stores its own");
  }
  auto problems = plausibility_problems(run.steps, plan, reported_band(plan, "csv", false));
  if (!problems.empty() && !opt.allow_mismatch) {
    problems.insert(problems.begin(), name + ": the MFU computed with this plan is implausible:");
    problems.push_back("fix the plan file (or pass --allow-mismatch to import anyway, keeping these as warnings)");
    return Error(problems);
  }
  for (auto& p : problems) run.warnings.push_back(name + ": " + p);
  return res;
}

}  // namespace mplan::runs
