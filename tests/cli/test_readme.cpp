// The README runs as written (issue 17): every command of its "Quick start" section (the ```sh blocks)
// is extracted and run, in order, from a fresh working directory laid out like a clone (the source
// tree's entries linked in, ../shared beside it), with this build's binaries first on PATH. Each must
// exit 0. Two are run in a bounded form and say so: `scripts/test` is the command that runs this very
// test (it is checked to be an executable bash script), and `scripts/demo` runs its main job with the
// binary under test (MPLAN_BIN) instead of installing and building a release first. `mplan-gui` runs
// headless (QT_QPA_PLATFORM=offscreen) and passes when it is still running after a few seconds.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../shared_data.h"
#include "run_cli.h"

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Drops a trailing "# comment" (a '#' preceded by whitespace, outside quotes).
std::string strip_comment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

// The commands of the ```sh blocks between "## Quick start" and the next "## " heading: comments
// dropped, backslash continuations joined, "a ; b" split into two commands.
std::vector<std::string> quick_start_commands(const std::string& readme) {
  std::vector<std::string> out;
  std::istringstream in(readme);
  std::string line, pending;
  bool section = false, block = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) section = line.rfind("## Quick start", 0) == 0;
    if (!section) continue;
    if (line.rfind("```", 0) == 0) {
      block = !block && line == "```sh";
      continue;
    }
    if (!block) continue;
    std::string t = trim(strip_comment(line));
    if (!t.empty() && t.back() == '\\') {
      pending += t.substr(0, t.size() - 1) + " ";
      continue;
    }
    t = trim(pending + t);
    pending.clear();
    if (t.empty()) continue;
    size_t start = 0, semi;
    while ((semi = t.find(" ; ", start)) != std::string::npos) {
      out.push_back(trim(t.substr(start, semi - start)));
      start = semi + 3;
    }
    out.push_back(trim(t.substr(start)));
  }
  return out;
}

// A directory shaped like a fresh clone: the source tree's entries linked in (build outputs stay out),
// and "shared" beside it as ../shared is for every developer and CI run.
std::string fake_clone() {
  fs::path root = fs::path(::testing::TempDir()) / ("readme_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::path repo = root / "mplan";
  fs::create_directories(repo);
  for (const auto& e : fs::directory_iterator(MPLAN_SOURCE_DIR)) {
    std::string n = e.path().filename().string();
    if (n == "build" || n == ".git") continue;
    fs::create_directory_symlink(e.path(), repo / n);  // also fine for files on Linux
  }
  fs::path shared = fs::path(MPLAN_SOURCE_DIR).parent_path() / "shared";
  if (fs::exists(shared)) fs::create_directory_symlink(shared, root / "shared");
  fs::create_directories(root / "cache");
  return repo.string();
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST(Readme, ExtractsTheQuickStartCommands) {
  std::string readme = slurp(std::string(MPLAN_SOURCE_DIR) + "/README.md");
  auto cmds = quick_start_commands(readme);
  ASSERT_GE(cmds.size(), 10u);
  EXPECT_EQ(cmds.front(), "scripts/demo");
  bool joined = false, split = false;
  for (const auto& c : cmds) {
    joined = joined || (c.rfind("mplan simulate", 0) == 0 && c.find("--trace step.json") != std::string::npos);
    split = split || c.rfind("mplan regress", 0) == 0;
  }
  EXPECT_TRUE(joined) << "a continued command was not joined";
  EXPECT_TRUE(split) << "'a ; b' was not split";
}

TEST(Readme, EveryQuickStartCommandRunsAsWritten) {
  std::string readme = slurp(std::string(MPLAN_SOURCE_DIR) + "/README.md");
  auto cmds = quick_start_commands(readme);
  ASSERT_FALSE(cmds.empty());
  const std::string repo = fake_clone();
  const std::string bin = std::string(MPLAN_BINARY_DIR) + "/bin";
  const std::string env = "cd " + quote(repo) + " && export PATH=" + quote(bin) +
                          ":\"$PATH\" XDG_CACHE_HOME=" + quote(repo + "/../cache") + " QT_QPA_PLATFORM=offscreen && ";
  const bool have_shared = fs::exists(fs::path(repo).parent_path() / "shared");
  for (const std::string& c : cmds) {
    SCOPED_TRACE(c);
    if (c == "scripts/test" || c.rfind("scripts/test ", 0) == 0) {
      struct stat st {};
      ASSERT_EQ(::stat((std::string(MPLAN_SOURCE_DIR) + "/scripts/test").c_str(), &st), 0);
      EXPECT_TRUE(st.st_mode & S_IXUSR);
      auto syntax = run_shell("bash -n " + quote(std::string(MPLAN_SOURCE_DIR) + "/scripts/test"));
      EXPECT_EQ(syntax.code, 0) << syntax.err;
      continue;
    }
    if (c.find("../shared/") != std::string::npos && !have_shared) {
      ADD_FAILURE() << c << ": " << shared_data::missing("calibration");  // one policy: fail, never skip
      continue;
    }
    std::string run = c;
    if (c.rfind("scripts/demo", 0) == 0) run = "MPLAN_BIN=" + quote(bin + "/mplan") + " " + c;
    bool gui = c.rfind("mplan-gui", 0) == 0 || c.rfind("mplan gui", 0) == 0;
    if (gui) run = "timeout 5 " + c;
    auto t0 = std::chrono::steady_clock::now();
    auto r = run_shell(env + run);
    std::cout << "[ ran      ] " << c << "  (exit " << r.code << ", "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s)\n";
    if (gui && r.code == 124) continue;  // still running after 5 s: it started
    EXPECT_EQ(r.code, 0) << "\n$ " << c << "\n--- stdout\n" << r.out.substr(0, 4000) << "\n--- stderr\n" << r.err.substr(0, 4000);
  }
}
