// TrainingSpec: global batch (sequences), sequence length and precision of one training run.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/precision.h"
#include "core/status.h"

namespace mplan {

struct TrainingSpec {
  int64_t global_batch_size = 0;  // sequences per optimizer step
  int64_t seq_length = 0;
  Precision precision = Precision::bf16;
};

Expected<TrainingSpec> training_from_json(const nlohmann::json& j);
nlohmann::json training_to_json(const TrainingSpec& t);

}  // namespace mplan
