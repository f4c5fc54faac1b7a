// The one process launcher (core/process.h): exit codes, signals, a program that does not exist,
// captured standard error and output.
#include <gtest/gtest.h>

#include <algorithm>

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

TEST(Process, CapturesBothStreamsWithoutDeadlock) {
  std::string out, err;
  ProcessOptions o;
  o.on_stdout = [&](std::string_view s) { out += s; };
  o.on_stderr = [&](std::string_view s) { err += s; };
  // more than a pipe buffer (64 KiB) on each stream, interleaved: reading one pipe at a time would block
  EXPECT_EQ(run_process({"sh", "-c",
                         "i=0; while [ $i -lt 3000 ]; do echo out-line-$i-..........................; "
                         "echo err-line-$i-.......................... >&2; i=$((i+1)); done; exit 4"},
                        o),
            4);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3000);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3000);
  EXPECT_EQ(out.find("err-line"), std::string::npos);
}

TEST(Process, OutputOfASuccessfulCommandOnly) {
  EXPECT_EQ(process_output({"sh", "-c", "echo hello; echo noise >&2"}).value_or("?"), "hello\n");
  EXPECT_FALSE(process_output({"sh", "-c", "echo partial; exit 1"}));
  EXPECT_FALSE(process_output({"/nonexistent/mplan-no-such-program"}));
}
