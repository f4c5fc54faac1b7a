// The golden-file tests' shared pieces: a canonical job (model, cluster, batch, precision, framework and
// the parallel fields as plan JSON), its Plan, and a golden file of tests/data that the test compares
// with, or rewrites when run with MPLAN_UPDATE_GOLDEN=1 (then its diff is reviewed on purpose).
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json_fields.h"
#include "core/plan.h"
#include "core/presets.h"
#include "tests/file_bytes.h"

namespace mplan::golden {

using J = nlohmann::json;

struct Job {
  const char* name;
  const char* model;
  const char* cluster;
  int gpus;
  int64_t gbs, seq;
  Precision prec;
  nlohmann::json parallel;  // plan JSON keys; a "balanced" pipeline_layout expands
  Framework fw = Framework::megatron;
};

// The job's model, cluster and training, with the parallel fields read from `par` (the job's, or the
// test's variant of them); a "balanced" pipeline_layout is expanded for the plan's model.
inline Plan plan_with(const Job& j, nlohmann::json par) {
  Plan p;
  p.model = *model_preset(j.model);
  p.cluster = *cluster_preset(j.cluster);
  p.training = {j.gbs, j.seq, j.prec};
  p.training.framework = j.fw;
  const bool balanced = par.contains("pipeline_layout") && par["pipeline_layout"] == "balanced";
  if (balanced) par.erase("pipeline_layout");
  par["world_size"] = j.gpus;
  auto q = parallel_from_json(par);
  EXPECT_TRUE(q) << j.name << ": " << (q ? "" : q.error().message());
  if (q) p.parallel = *q;
  if (balanced) p.parallel.pipeline_layout = balanced_pipeline_layout(p.model, p.parallel.pp, p.parallel.vpp);
  return p;
}

// tests/data/<name>: what a test compares with, unless MPLAN_UPDATE_GOLDEN is set, when the test's
// results are written there instead.
class File {
 public:
  explicit File(const std::string& name)
      : path_(std::string(MPLAN_SOURCE_DIR) + "/tests/data/" + name), update_(std::getenv("MPLAN_UPDATE_GOLDEN") != nullptr) {
    if (update_) return;
    if (!std::ifstream(path_)) {
      missing_ = path_ + " missing: run with MPLAN_UPDATE_GOLDEN=1";
      return;
    }
    golden_ = nlohmann::json::parse(test::file_bytes(path_));
  }
  bool updating() const { return update_; }
  // "" when the file was read (or is being rewritten), else why not.
  const std::string& missing() const { return missing_; }
  // The stored entry of `key`, or "" (as an error message) when there is none.
  std::string lacks(const std::string& key) const {
    return golden_.contains(key) ? "" : key + " not in " + path_ + ": run with MPLAN_UPDATE_GOLDEN=1";
  }
  const nlohmann::json& at(const std::string& key) const { return golden_.at(key); }
  // When updating: writes `now` as the new golden file; "" or the error.
  std::string write(const nlohmann::json& now) const { return update_ ? write_text_file_atomic(path_, now.dump(2) + "\n") : ""; }

 private:
  std::string path_;
  bool update_;
  std::string missing_;
  nlohmann::json golden_ = nlohmann::json::object();
};

}  // namespace mplan::golden
