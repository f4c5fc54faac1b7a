// Helpers of the runs tests: a fresh temporary directory per test, file bytes, test data paths, logs
// read from text, run warnings.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/plan.h"
#include "runs/log_jobs.h"
#include "runs/runs_db.h"
#include "tests/file_bytes.h"

namespace runs_test {

inline std::string temp_dir() {
  static int counter = 0;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "_" + info->name() : "runs";
  auto dir = std::filesystem::path(::testing::TempDir()) /
             ("mplan_runs_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string read_bytes(const std::string& path) { return mplan::test::file_bytes(path); }

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

inline std::string data_path(const std::string& name) {
  return std::string(MPLAN_SOURCE_DIR) + "/tests/data/megatron_logs/" + name;
}

inline mplan::Plan load_plan(const std::string& name) {
  auto p = mplan::read_plan_file(data_path(name));
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
  return p.value();
}

// The jobs of a log given as text (one file named `name`); an empty set (and a test failure) when
// the text holds none.
inline mplan::runs::LogSet read_log_text(const std::string& text, const std::string& name = "train.log") {
  std::istringstream in(text);
  std::vector<mplan::runs::ScannedLog> files;
  files.push_back(mplan::runs::scan_log(in, name));
  auto set = mplan::runs::combine_logs(files);
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : set.error().message());
  return set.ok() ? set.value() : mplan::runs::LogSet{};
}

inline bool has_warning(const mplan::runs::RunRecord& r, const std::string& needle) {
  for (const auto& w : r.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace runs_test
