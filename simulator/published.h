// Published training runs (the CSV columns of shared/calibration/published_runs_dev.csv and
// published_memory_dev.csv) turned into plans, with the measured throughput/memory each row states.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"

namespace mplan {

struct CsvRow {
  std::map<std::string, std::string> f;
  const std::string& get(const std::string& k) const;
  std::optional<double> num(const std::string& k) const;
};

// CSV through core/csv.h (RFC 4180: quoted fields, embedded commas/quotes/newlines, BOM, CRLF);
// the header row gives the keys.
Expected<std::vector<CsvRow>> read_csv_file(const std::string& path);
Expected<std::vector<CsvRow>> read_csv_text(const std::string& text, const std::string& what);

struct PublishedRun {
  std::string row_id, source_id, model_name, gpu_type, precision_text;
  Plan plan;
  std::vector<std::string> families;  // dense|moe, cp, fp8, fsdp
  std::string notes;                  // assumptions made while mapping the row
};

// What a row's plan takes beyond its own columns and its framework release's documented defaults
// (core/framework_profile.h): the recipe facts behind the row (data/run_facts, the default), or nothing
// more — the run as stated, as a user would give it to `mplan simulate` (`mplan validate --as-stated`;
// the model's dimensions and the framework a recipe names are still read, they say which run it is).
enum class RowSettings { with_run_facts, as_stated };

// The row as a plan, or the reason it cannot be expressed (returned as Error).
Expected<PublishedRun> published_run_from_row(const CsvRow& r, RowSettings settings = RowSettings::with_run_facts);

// Measured tokens/s per GPU of a throughput row, from tokens/s, step time or TFLOP/s with the source's
// FLOP convention (see the calibration README); `how` says which.
std::optional<double> measured_tokens_per_s_per_gpu(const CsvRow& r, const PublishedRun& run, std::string* how);

// Why a row states no run that could be scored ("" when it does): it leaves the GPU count, the global
// batch or the sequence length blank (after the recipe facts fill blank model columns). Such a row is
// listed and not scored; a complete row that mplan cannot build or simulate is charged instead
// (see validate.h).
std::string unstated_run(const CsvRow& r, RowSettings settings = RowSettings::with_run_facts);
// Whether a throughput row gives a measurement (tokens/s per GPU, step time or TFLOP/s, positive).
bool has_throughput_measurement(const CsvRow& r);

// Rows a clean scoring set drops (secondary sources, *_suspect, batch_inconsistent, truncated,
// parallel_config_not_stated), with the flag that caused it.
std::optional<std::string> doubtful_flag(const CsvRow& r);

// Rows whose source documents a performance regression of that software release (flag
// `known_regression`, with the source's footnote in the row's notes): they measure a bug, not the
// system, so they are predicted and reported with their error but neither scored nor fitted.
bool known_regression(const CsvRow& r);

}  // namespace mplan
