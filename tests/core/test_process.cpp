// The one process launcher (core/process.h): exit codes, signals, a program that does not exist,
// captured standard error.
#include <gtest/gtest.h>

#include "core/process.h"

using namespace mplan;

TEST(Process, ExitCodeAndSignal) {
  EXPECT_EQ(run_process({"sh", "-c", "exit 0"}), 0);
  EXPECT_EQ(run_process({"sh", "-c", "exit 3"}), 3);
  EXPECT_EQ(run_process({"sh", "-c", "kill -9 $$"}), 128 + 9);
  EXPECT_EQ(run_process({}), -1);
}

TEST(Process, MissingProgramIs127AndSaysWhy) {
  std::string err;
  ProcessOptions o;
  o.on_stderr = [&](std::string_view s) { err += s; };
  o.exec_hint = "; install it";
  EXPECT_EQ(run_process({"/nonexistent/mplan-no-such-program"}, o), 127);
  EXPECT_NE(err.find("cannot run /nonexistent/mplan-no-such-program"), std::string::npos) << err;
  EXPECT_NE(err.find("; install it"), std::string::npos) << err;
}

TEST(Process, CapturesStandardErrorOnly) {
  std::string err;
  ProcessOptions o;
  o.on_stderr = [&](std::string_view s) { err += s; };
  EXPECT_EQ(run_process({"sh", "-c", "echo to-err >&2; exit 5"}, o), 5);
  EXPECT_EQ(err, "to-err\n");
}
