// Profile database: migrations from empty and older schemas, files we must not touch (newer schema,
// foreign SQLite file, corrupt file), and concurrent writers that must not lose rows.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "profiles/profile_db.h"
#include "tests/file_bytes.h"

using namespace mplan;
using namespace mplan::profiles;

namespace {

std::string temp_path(const std::string& name) {
  std::string p = ::testing::TempDir() + "/mplan_profiles_" + std::to_string(::getpid()) + "_" + name;
  std::remove(p.c_str());
  std::remove((p + "-wal").c_str());
  std::remove((p + "-shm").c_str());
  return p;
}

using test::file_bytes;

Device some_device() {
  Device d;
  d.kind = "gpu";
  d.name = "H100-SXM5-80GB";
  d.peak_tflops = {{"bf16", 989.4}};
  d.hbm_gbps = 3350;
  d.memory_gib = 80;
  d.sm_count = 132;
  d.cluster = "dgx-h100";
  return d;
}

KernelRow gemm_row(int64_t dev, int64_t m) {
  KernelRow r;
  r.device_id = dev;
  r.op = "fc1_gemm";
  r.pass = "fwd";
  r.dtype = "bf16";
  r.m = m, r.n = 4096, r.k = 1024, r.groups = 1;
  r.flops = 2.0 * m * 4096 * 1024;
  r.bytes = 1e6;
  r.reps = 5;
  r.median_us = 10, r.p10_us = 9, r.p90_us = 11;
  return r;
}

// Runs sqlite statements on a raw connection (to build foreign / newer files).
void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

}  // namespace

TEST(ProfileDb, CreatesNewFileAtCurrentSchemaInWalMode) {
  std::string p = temp_path("new.db");
  auto db = ProfileDb::open(p);
  ASSERT_TRUE(db) << db.error().message();
  EXPECT_EQ(db.value().schema_version(), kSchemaVersion);
  {
    Statement s(db.value().connection(), "PRAGMA journal_mode");
    ASSERT_EQ(s.step(), SQLITE_ROW);
    EXPECT_EQ(s.text(0), "wal");
  }
  auto id = db.value().add_device(some_device());
  ASSERT_TRUE(id) << id.error().message();
  ASSERT_TRUE(db.value().insert_kernels({gemm_row(*id, 1024)}));
  auto ks = db.value().kernels(*id);
  ASSERT_TRUE(ks);
  ASSERT_EQ(ks->size(), 1u);
  EXPECT_EQ((*ks)[0].op, "fc1_gemm");
  EXPECT_EQ((*ks)[0].m, 1024);
  EXPECT_EQ((*ks)[0].heads, 0);  // NULL shape columns read back as 0
}

TEST(ProfileDb, EmptyFileIsInitialised) {
  std::string p = temp_path("empty.db");
  { std::ofstream(p).flush(); }
  auto db = ProfileDb::open(p);
  ASSERT_TRUE(db) << db.error().message();
  EXPECT_EQ(db.value().schema_version(), kSchemaVersion);
}

TEST(ProfileDb, MigratesVersionOneKeepingRows) {
  std::string p = temp_path("v1.db");
  ASSERT_TRUE(create_database_at_version(p, 1));
  raw_exec(p,
           "INSERT INTO devices(id, kind, name, created_at) VALUES (1, 'cpu', 'old cpu', '2024-01-01T00:00:00Z');"
           "INSERT INTO kernels(device_id, op, pass, dtype, m, n, k, flops, bytes, reps, median_us, p10_us, p90_us)"
           " VALUES (1, 'qkv_gemm', 'fwd', 'fp32', 64, 192, 64, 1.0, 2.0, 3, 5.0, 4.0, 6.0);"
           "INSERT INTO collectives(device_id, op, group_size, members_per_node, bytes, dtype, reps, median_us, p10_us,"
           " p90_us, algbw_gbps, busbw_gbps) VALUES (1, 'all_reduce', 16, 8, 1024, 'fp32', 3, 10, 9, 11, 0.1, 0.2);");
  auto db = ProfileDb::open(p);
  ASSERT_TRUE(db) << db.error().message();
  EXPECT_EQ(db.value().schema_version(), kSchemaVersion);
  auto ks = db.value().kernels(0);
  ASSERT_TRUE(ks);
  ASSERT_EQ(ks->size(), 1u);
  EXPECT_EQ((*ks)[0].op, "qkv_gemm");
  EXPECT_EQ((*ks)[0].session_id, 0);
  auto cs = db.value().collectives(0);
  ASSERT_TRUE(cs);
  ASSERT_EQ(cs->size(), 1u);
  EXPECT_EQ((*cs)[0].domains, 2);  // derived from group size 16 with 8 per node
  // the new tables work
  auto sess = db.value().begin_session(1, "kernels", "test");
  ASSERT_TRUE(sess);
  EXPECT_TRUE(db.value().finish_session(*sess, "complete"));
}

TEST(ProfileDb, EveryMigrationStepOpensAndReaches) {
  for (int v = 0; v <= kSchemaVersion; ++v) {
    std::string p = temp_path("step" + std::to_string(v) + ".db");
    ASSERT_TRUE(create_database_at_version(p, v));
    auto db = ProfileDb::open(p);
    ASSERT_TRUE(db) << "from version " << v << ": " << db.error().message();
    EXPECT_EQ(db.value().schema_version(), kSchemaVersion);
  }
}

TEST(ProfileDb, NewerSchemaIsRefusedAndUntouched) {
  std::string p = temp_path("newer.db");
  ASSERT_TRUE(create_database_at_version(p, kSchemaVersion));
  raw_exec(p, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  std::string before = file_bytes(p);
  auto db = ProfileDb::open(p);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().message().find("newer mplan"), std::string::npos) << db.error().message();
  EXPECT_NE(db.error().message().find("not changed"), std::string::npos);
  EXPECT_EQ(file_bytes(p), before);
}

TEST(ProfileDb, ForeignSqliteFileIsRefusedAndUntouched) {
  std::string p = temp_path("foreign.db");
  raw_exec(p, "CREATE TABLE photos(id INTEGER PRIMARY KEY, path TEXT); INSERT INTO photos(path) VALUES ('a.jpg');");
  std::string before = file_bytes(p);
  auto db = ProfileDb::open(p);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().message().find("not an mplan profile database"), std::string::npos) << db.error().message();
  EXPECT_EQ(file_bytes(p), before);
  // also a foreign file that happens to set user_version
  raw_exec(p, "PRAGMA user_version = 1");
  before = file_bytes(p);
  EXPECT_FALSE(ProfileDb::open(p));
  EXPECT_EQ(file_bytes(p), before);
}

TEST(ProfileDb, CorruptFileIsRefusedAndUntouched) {
  std::string p = temp_path("corrupt.db");
  {
    std::ofstream out(p, std::ios::binary);
    out << "this is not a database, just some text that happens to be long enough";
  }
  std::string before = file_bytes(p);
  auto db = ProfileDb::open(p);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().message().find("not a readable SQLite database"), std::string::npos) << db.error().message();
  EXPECT_EQ(file_bytes(p), before);

  // a real profile database with its pages damaged after the header
  std::string q = temp_path("damaged.db");
  {
    auto d = ProfileDb::open(q);
    ASSERT_TRUE(d);
    auto id = d.value().add_device(some_device());
    std::vector<KernelRow> rows;
    rows.reserve(500);
    for (int i = 0; i < 500; ++i) rows.push_back(gemm_row(*id, 64 + i));
    ASSERT_TRUE(d.value().insert_kernels(rows));
    ASSERT_EQ(d.value().connection().exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;"), "");
  }
  std::string bytes = file_bytes(q);
  ASSERT_GT(bytes.size(), 8192u);
  for (size_t i = 4096; i < bytes.size(); i += 7) bytes[i] = char(0xA5);
  {
    std::ofstream out(q, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  auto damaged = ProfileDb::open(q);
  ASSERT_FALSE(damaged);
  EXPECT_EQ(file_bytes(q), bytes);
}

TEST(ProfileDb, ReadOnlyNeverCreates) {
  std::string p = temp_path("absent.db");
  auto db = ProfileDb::open(p, OpenMode::read_only);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().message().find("no such profile database"), std::string::npos);
  EXPECT_NE(::access(p.c_str(), F_OK), 0);
}

TEST(ProfileDb, DirectoryIsRefused) {
  auto db = ProfileDb::open(::testing::TempDir());
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().message().find("directory"), std::string::npos);
}

TEST(ProfileDb, ConcurrentWritersLoseNoRows) {
  std::string p = temp_path("concurrent.db");
  int64_t dev = 0;
  {
    auto db = ProfileDb::open(p);
    ASSERT_TRUE(db);
    dev = *db.value().add_device(some_device());
  }
  const int writers = 4, batches = 25, per_batch = 8;
  std::vector<pid_t> kids;
  for (int w = 0; w < writers; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto db = ProfileDb::open(p);
      if (!db) _exit(3);
      for (int b = 0; b < batches; ++b) {
        std::vector<KernelRow> rows;
        rows.reserve(size_t(per_batch));
        for (int i = 0; i < per_batch; ++i) rows.push_back(gemm_row(dev, 1 + w * 100000 + b * 100 + i));
        if (!db.value().insert_kernels(rows)) _exit(4);
        CollectiveRow c;
        c.device_id = dev;
        c.op = "all_reduce";
        c.group_size = 2, c.members_per_node = 2, c.bytes = 1024 * (b + 1), c.reps = 1;
        c.median_us = c.p10_us = c.p90_us = 1;
        if (!db.value().insert_collectives({c})) _exit(5);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(k, &st, 0), k);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "writer exit " << WEXITSTATUS(st);
  }
  auto db = ProfileDb::open(p);
  ASSERT_TRUE(db);
  EXPECT_EQ(db.value().kernels(dev)->size(), size_t(writers * batches * per_batch));
  EXPECT_EQ(db.value().collectives(dev)->size(), size_t(writers * batches));
}

TEST(ProfileDb, FailedBatchLeavesNothing) {
  std::string p = temp_path("atomic.db");
  auto db = ProfileDb::open(p);
  ASSERT_TRUE(db);
  int64_t dev = *db.value().add_device(some_device());
  std::vector<KernelRow> rows = {gemm_row(dev, 1), gemm_row(dev, 2)};
  rows[1].pass = "sideways";  // violates the CHECK constraint
  EXPECT_FALSE(db.value().insert_kernels(rows));
  EXPECT_EQ(db.value().kernels(dev)->size(), 0u);
}

TEST(ProfileDb, ImportCopiesDeviceWithRows) {
  auto a = ProfileDb::open(":memory:");
  auto b = ProfileDb::open(":memory:");
  ASSERT_TRUE(a && b);
  int64_t dev = *a.value().add_device(some_device());
  ASSERT_TRUE(a.value().insert_kernels({gemm_row(dev, 64), gemm_row(dev, 128)}));
  (void)b.value().add_device(some_device());  // so ids differ
  auto id = b.value().import_device(*a, dev, "test");
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_NE(*id, dev);
  EXPECT_EQ(b.value().kernels(*id)->size(), 2u);
  EXPECT_EQ(b.value().devices()->back().name, "H100-SXM5-80GB");
}
