// The shared I/O helpers of core/: outputs never clobber what a path names (devices written through,
// symlinks resolved, directories refused), inputs are size-capped regular files (a device or FIFO is
// refused before a byte is read), JSON is parsed strictly (duplicate keys, nesting) and typed fields
// refuse null, non-finite and out-of-range values with the field named.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "core/bounded_input.h"
#include "core/json_fields.h"
#include "core/safe_output.h"
#include "core/strict_json.h"

using namespace mplan;

namespace {

std::string dir() {
  static std::string d = [] {
    std::string p = ::testing::TempDir() + "/safe_io_" + std::to_string(::getpid());
    ::mkdir(p.c_str(), 0755);
    return p;
  }();
  return d;
}

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(SafeOutput, CharacterDeviceIsWrittenThroughNotReplaced) {
  struct stat before {
  }, after{};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  EXPECT_EQ(write_output_file("/dev/null", "hello\n"), "");
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(before.st_ino, after.st_ino);
  // a full device reports the failure instead of pretending success
  std::string err = write_output_file("/dev/full", "x");
  EXPECT_TRUE(contains(err, "/dev/full")) << err;
}

TEST(SafeOutput, SymlinkIsResolvedAndStaysALink) {
  std::string target = dir() + "/target.txt", link = dir() + "/link.txt";
  ::unlink(target.c_str());
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink("target.txt", link.c_str()), 0);  // relative, and dangling at first
  EXPECT_EQ(write_output_file(link, "one"), "");
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(target), "one");
  EXPECT_EQ(write_output_file(link, "two"), "");
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(target), "two");
}

TEST(SafeOutput, DirectoryIsRefusedAndRegularFileReplacedKeepingMode) {
  std::string err = write_output_file(dir(), "x");
  EXPECT_TRUE(contains(err, "is a directory")) << err;
  EXPECT_FALSE(check_output_path(dir()).empty());
  EXPECT_FALSE(check_output_path(dir() + "/no/such/dir/file.json").empty());
  std::string f = dir() + "/regular.txt";
  EXPECT_EQ(write_output_file(f, "a"), "");
  ASSERT_EQ(::chmod(f.c_str(), 0600), 0);
  EXPECT_EQ(write_output_file(f, "b"), "");
  struct stat st {};
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(slurp(f), "b");
}

TEST(SafeOutput, FifoWithoutReaderIsRefusedNotReplaced) {
  std::string fifo = dir() + "/out.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::string err = write_output_file(fifo, "x");
  EXPECT_TRUE(contains(err, "FIFO")) << err;
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(BoundedInput, DevicesFifosAndDirectoriesAreRefusedBeforeReading) {
  std::vector<std::string> problems;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(read_input_file("/dev/zero", kMaxJsonInputBytes, problems));
  std::string fifo = dir() + "/in.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_FALSE(read_input_file(fifo, kMaxJsonInputBytes, problems));  // no writer: must not block
  EXPECT_FALSE(read_input_file(dir(), kMaxJsonInputBytes, problems));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_TRUE(contains(problems[0], "/dev/zero: is a character device")) << problems[0];
  EXPECT_TRUE(contains(problems[1], "FIFO")) << problems[1];
  EXPECT_TRUE(contains(problems[2], "directory")) << problems[2];
  EXPECT_FALSE(check_input_file("/dev/zero").empty());
}

TEST(BoundedInput, SizeCapIsEnforced) {
  std::string f = dir() + "/big.txt";
  std::ofstream(f) << std::string(1000, 'x');
  std::vector<std::string> problems;
  EXPECT_FALSE(read_input_file(f, 999, problems));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(contains(problems[0], "larger than")) << problems[0];
  auto ok = read_input_file(f, 1000, problems);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->size(), 1000u);
}

TEST(StrictJson, DuplicateKeysAreRefusedWithTheirPath) {
  std::vector<std::string> problems;
  EXPECT_FALSE(parse_json_strict(R"({"model": {"hidden_size": 1, "hidden_size": 2}})", "m.json", problems));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(contains(problems[0], "'model.hidden_size' is given twice")) << problems[0];
  // the same key in different objects is fine
  problems.clear();
  EXPECT_TRUE(parse_json_strict(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})", "ok", problems));
  EXPECT_TRUE(problems.empty());
}

TEST(StrictJson, DeepNestingIsRefusedNotOverflowed) {
  std::vector<std::string> problems;
  std::string deep(200000, '[');
  EXPECT_FALSE(parse_json_strict(deep, "deep.json", problems));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(contains(problems[0], "nested deeper")) << problems[0];
}

TEST(JsonFields, NullIsRefusedNamingTheField) {
  std::vector<std::string> problems;
  nlohmann::json j = nlohmann::json::parse(R"({"ffn_hidden_size": null, "num_layers": 2})");
  JsonFields f(j, "model", problems);
  EXPECT_EQ(f.integer_or("ffn_hidden_size", 99), 99);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(contains(problems[0], "model.ffn_hidden_size: null")) << problems[0];
  // Hugging Face configs: null means the library's default
  problems.clear();
  JsonFields hf(j, "config.json", problems, true);
  EXPECT_EQ(hf.integer_or("ffn_hidden_size", 99), 99);
  EXPECT_TRUE(problems.empty());
}

TEST(JsonFields, NumbersAreFiniteAndBounded) {
  std::vector<std::string> problems;
  nlohmann::json j = {{"big", 1e300}, {"huge_int", 18446744073709551615ull}, {"frac", 2.5}, {"ok", 7.0}, {"peak", 1e308}};
  JsonFields f(j, "x", problems);
  EXPECT_FALSE(f.opt_integer("big"));
  EXPECT_FALSE(f.opt_integer("huge_int"));
  EXPECT_FALSE(f.opt_integer("frac"));
  EXPECT_EQ(f.opt_integer("ok").value_or(0), 7);
  EXPECT_FALSE(f.opt_number("peak", false, 1e6));
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_TRUE(contains(problems[0], "x.big: must be <=")) << problems[0];
  EXPECT_TRUE(contains(problems[3], "x.peak: must be > 0 and <= 1e+06")) << problems[3];
}
