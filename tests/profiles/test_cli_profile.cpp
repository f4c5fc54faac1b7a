// `mplan profile` / `mplan calibrate` end to end: bad input exits 2 and leaves files untouched, a
// quick CPU profile (kernels and MPI collectives) lands in the database, Ctrl-C keeps completed
// batches, shipped profiles calibrate into files the simulator reads, the local-cpu cluster loads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill(), not in <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/cluster_spec.h"
#include "core/json_fields.h"
#include "profiles/profile_db.h"
#include "simulator/cost_params.h"
#include "tests/cli/run_cli.h"
#include "tests/shared_data.h"

using namespace mplan;
using namespace mplan::profiles;

namespace {

std::string temp_path(const std::string& name) {
  std::string p = ::testing::TempDir() + "/mplan_cli_profile_" + std::to_string(::getpid()) + "_" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((p + suffix).c_str());
  return p;
}

std::string bytes_of(const std::string& path) { return slurp(path); }

std::string mplan_bin() { return std::string(MPLAN_BINARY_DIR) + "/bin/mplan"; }

}  // namespace

TEST(CliProfile, UnknownBackendExits2) {
  auto r = run_mplan("profile --backend rocm --db " + temp_path("x.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("backend"), std::string::npos) << r.err;
  r = run_mplan("profile --db " + temp_path("y.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--backend cpu|cuda is required"), std::string::npos) << r.err;
}

TEST(CliProfile, CudaBackendWithoutDeviceExits2) {
  std::string db = temp_path("cuda.db");
  auto r = run_mplan("profile --backend cuda --db " + db + " --quick --no-progress");
  if (r.code == 0) GTEST_SKIP() << "a CUDA device is present: the no-device path is not exercised";
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.find("no CUDA device") != std::string::npos || r.err.find("built without CUDA") != std::string::npos)
      << r.err;
}

TEST(CliProfile, CorruptForeignAndNewerFilesExit2Untouched) {
  std::string corrupt = temp_path("corrupt.db");
  { std::ofstream(corrupt) << "definitely not sqlite, but more than sixteen bytes long"; }
  std::string foreign = temp_path("foreign.db");
  {
    sqlite3* h = nullptr;
    sqlite3_open(foreign.c_str(), &h);
    sqlite3_exec(h, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  std::string newer = temp_path("newer.db");
  ASSERT_TRUE(create_database_at_version(newer, kSchemaVersion));
  {
    sqlite3* h = nullptr;
    sqlite3_open(newer.c_str(), &h);
    sqlite3_exec(h, ("PRAGMA user_version = " + std::to_string(kSchemaVersion + 3)).c_str(), nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  for (const auto& [file, what] : {std::pair{corrupt, "not a readable SQLite database"},
                                   std::pair{foreign, "not an mplan profile database"}, std::pair{newer, "newer mplan"}}) {
    std::string before = bytes_of(file);
    for (const std::string& cmd : {"profile --backend cpu --quick --no-progress --db " + file, "calibrate --db " + file,
                                   "profile --import dgx-h100 --db " + file}) {
      auto r = run_mplan(cmd);
      EXPECT_EQ(r.code, 2) << cmd;
      EXPECT_NE(r.err.find(what), std::string::npos) << cmd << ": " << r.err;
      EXPECT_EQ(bytes_of(file), before) << cmd << " changed " << file;
    }
  }
}

TEST(CliProfile, ShippedProfileCalibratesIntoALoadableFile) {
  std::string out = temp_path("h200.json");
  auto r = run_mplan("calibrate --shipped dgx-h200 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("collectives.scale_up"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gemm"), std::string::npos);
  auto cal = read_calibration_file(out, CostParams{});
  ASSERT_TRUE(cal) << cal.error().message();
  EXPECT_EQ(cal->gpu, "H200-SXM-141GB");
  EXPECT_GT(cal->params.gemm_eff_max, 0.5);
  // importing into a file database and calibrating from it gives the same fit
  std::string db = temp_path("imported.db");
  ASSERT_EQ(run_mplan("profile --import dgx-h200 --db " + db).code, 0);
  auto j = run_mplan("calibrate --db " + db + " --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  auto parsed = nlohmann::json::parse(j.out);
  EXPECT_NEAR(parsed["params"]["gemm_eff_max"].get<double>(), cal->params.gemm_eff_max, 1e-9);
  EXPECT_EQ(run_mplan("calibrate --shipped nope").code, 2);
  EXPECT_EQ(run_mplan("calibrate").code, 2);
}

TEST(CliProfile, QuickCpuProfileKernelsAndCollectivesAndLocalCluster) {
  std::string db = temp_path("quick.db");
  std::string cluster = temp_path("local-cpu.json");
  auto r = run_mplan("profile --backend cpu --quick --no-progress --db " + db + " --emit-cluster " + cluster);
  ASSERT_EQ(r.code, 0) << r.err;
  auto d = ProfileDb::open(db);
  ASSERT_TRUE(d);
  auto& pdb = d.value();
  EXPECT_GT(pdb.kernels(0)->size(), 50u);
  auto devs = pdb.devices();
  ASSERT_EQ(devs->size(), 1u);
  EXPECT_EQ(devs->front().kind, "cpu");
  EXPECT_FALSE(devs->front().libraries["openblas_core"].get<std::string>().empty());
  auto sessions = pdb.sessions();  // held: `*pdb.sessions()` in the for would dangle
  ASSERT_TRUE(sessions);
  for (const auto& s : *sessions) EXPECT_EQ(s.status, "complete") << s.kind;
#ifdef MPLAN_PROFILES_HAVE_MPI
  if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
    auto cs = pdb.collectives(0);
    EXPECT_EQ(cs->size(), 40u);  // 5 collectives x 8 sizes x group size 2
    for (const auto& c : *cs) EXPECT_GT(c.busbw_gbps, 0) << c.op << " " << c.bytes;
  }
#endif
  std::vector<std::string> problems;
  auto text = read_text_file(cluster, problems);
  ASSERT_TRUE(text);
  auto cj = nlohmann::json::parse(*text);
  auto c = cluster_from_json(cj);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->name, "local-cpu");
  EXPECT_TRUE(unsourced_cluster_fields(*c).empty()) << unsourced_cluster_fields(*c).front();
  EXPECT_GT(c->gpu.peak(Precision::fp32).value_or(0), 1e-3);
  auto cal = run_mplan("calibrate --db " + db + " --out " + temp_path("cpu-cal.json"));
  EXPECT_EQ(cal.code, 0) << cal.err;
  EXPECT_NE(cal.out.find("attention"), std::string::npos);
}

TEST(CliProfile, InterruptKeepsCompletedBatches) {
  std::string db = temp_path("interrupted.db");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(mplan_bin().c_str(), "mplan", "profile", "--backend", "cpu", "--no-progress", "--no-collectives", "--db", db.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // wait until some batches are committed, then Ctrl-C
  size_t rows = 0;
  for (int i = 0; i < 300 && rows < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto d = ProfileDb::open(db, OpenMode::read_only);
    if (d) rows = d->kernels(0).ok() ? d->kernels(0)->size() : 0;
  }
  ASSERT_GE(rows, 10u) << "no rows appeared within 30 s";
  kill(-pid, SIGINT);
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  auto d = ProfileDb::open(db);
  ASSERT_TRUE(d) << d.error().message();
  auto& pdb = d.value();
  EXPECT_GE(pdb.kernels(0)->size(), rows);
  auto sessions = pdb.sessions();
  ASSERT_EQ(sessions->size(), 1u);
  EXPECT_EQ(sessions->front().status, "interrupted");
  Statement check(pdb.connection(), "PRAGMA integrity_check");
  ASSERT_EQ(check.step(), SQLITE_ROW);
  EXPECT_EQ(check.text(0), "ok");
}

TEST(CliProfile, RunsFitImprovesThroughputErrorOfItsGpu) {
  const std::string csv = shared_data::path("calibration/published_runs_dev.csv");
  ASSERT_EQ(shared_data::missing("calibration/published_runs_dev.csv"), "");
  std::string out = temp_path("h100-runs.json");
  auto r = run_mplan("calibrate --shipped dgx-h100 --runs " + csv + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("run family"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(out));
  const auto& runs = j["fit"]["runs"];
  EXPECT_GT(runs["rows_used"].get<int>(), 10);
  EXPECT_LT(runs["mape_after_pct"].get<double>(), runs["mape_before_pct"].get<double>());
  EXPECT_TRUE(runs["fitted"].contains("overlap_slowdown"));
  EXPECT_EQ(run_mplan("calibrate --shipped dgx-h100 --runs /nonexistent.csv").code, 2);
}
