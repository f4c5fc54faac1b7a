// Fuzz entry points, one per parser mplan exposes to users' files: model JSON, Hugging Face config,
// cluster, plan, calibration, published-runs CSV (validate --runs), runs CSV (runs import --csv),
// Megatron-LM log and profile database. Each takes arbitrary bytes through the same functions the CLI
// uses and then uses what was accepted (counting, simulating, storing) the way the CLI would. They
// return 0; a crash, a sanitizer report, an escaping exception or a hang is the finding.
// The same entry points serve libFuzzer (fuzz_main.cpp, clang) and the replay test (replay.cpp, any
// compiler) that runs the committed corpus and every past reproducer in the normal build.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mplan::fuzz {

using Entry = int (*)(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // also the folder of its corpus: tests/fuzz/corpus/<name>/
  Entry entry;
};

// Every target, in a fixed order.
const std::vector<Target>& targets();

int model_json(const uint8_t* data, size_t size);
int hf_config(const uint8_t* data, size_t size);
int cluster_json(const uint8_t* data, size_t size);
int plan_json(const uint8_t* data, size_t size);
int calibration_json(const uint8_t* data, size_t size);
int published_csv(const uint8_t* data, size_t size);
int runs_csv(const uint8_t* data, size_t size);
int megatron_log(const uint8_t* data, size_t size);
int profile_db(const uint8_t* data, size_t size);

}  // namespace mplan::fuzz
