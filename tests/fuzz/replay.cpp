// Replays the committed fuzz corpus (tests/fuzz/corpus/<target>/) and every reproducer of a past crash
// or hang (tests/fuzz/crashes/<target>/) through the fuzz entry points, in the normal build: each input
// must return without a crash, an escaping exception or taking longer than a hang would.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/file_bytes.h"
#include "tests/fuzz/fuzz_targets.h"

namespace fs = std::filesystem;

namespace mplan::fuzz {
void PrintTo(const Target& t, std::ostream* os) { *os << t.name; }  // test names in ctest
}  // namespace mplan::fuzz

namespace {

// libFuzzer's own -timeout in scripts/fuzz is 10 s; a replayed input in an optimised build must be far
// below that.
constexpr double kHangSeconds = 10.0;

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> out;
  for (const char* kind : {"corpus", "crashes"}) {
    fs::path dir = fs::path(MPLAN_SOURCE_DIR) / "tests/fuzz" / kind / target;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class Replay : public ::testing::TestWithParam<mplan::fuzz::Target> {};

TEST_P(Replay, CorpusAndReproducers) {
  const auto& t = GetParam();
  auto files = inputs(t.name);
  ASSERT_FALSE(files.empty()) << "no seed corpus for " << t.name << " under tests/fuzz/corpus/" << t.name;
  for (const auto& f : files) {
    std::string data = mplan::test::file_bytes(f.string());
    auto t0 = std::chrono::steady_clock::now();
    try {
      t.entry(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << f << ": exception escaped the parser: " << e.what();
    } catch (...) {
      ADD_FAILURE() << f << ": unknown exception escaped the parser";
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, kHangSeconds) << f << " took " << s << " s";
  }
}

std::string name_of(const ::testing::TestParamInfo<mplan::fuzz::Target>& i) { return i.param.name; }

INSTANTIATE_TEST_SUITE_P(Fuzz, Replay, ::testing::ValuesIn(mplan::fuzz::targets()), name_of);

}  // namespace
