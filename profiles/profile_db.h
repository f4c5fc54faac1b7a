// The profile database (SQLite): devices, profiling sessions, kernel measurements keyed by the op
// vocabulary of core/ops.h, collective measurements (nccl-tests conventions) and calibrations.
// Versioned schema with migrations (PRAGMA user_version), WAL journal, busy timeout, one
// transaction per write. Schema: docs/profiles.md.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/sqlite_db.h"
#include "core/status.h"

namespace mplan::profiles {

using sqlite::Connection;
using sqlite::Statement;
using sqlite::Transaction;

constexpr int kSchemaVersion = 2;
constexpr const char* kApplication = "mplan.profiles";

// One measured (or published) device: a CPU core or a GPU. Each profiling run records its own row,
// so profiles of different hosts, drivers and dates live side by side.
struct Device {
  int64_t id = 0;
  std::string kind = "gpu";  // cpu | gpu
  std::string name;          // GPU name as in core/cluster_spec.h presets, or the CPU model
  std::string host;
  std::map<std::string, double> peak_tflops;  // dense peak per precision name ("bf16", "fp32")
  double hbm_gbps = 0;
  double memory_gib = 0;
  int sm_count = 0;
  std::string driver;
  nlohmann::json libraries = nlohmann::json::object();  // {"openblas": "...", "corename": "Zen", "mpi": ...}
  std::string created_at;                               // ISO 8601 UTC
  std::string source;                                   // "measured on <host> <date>" or where published numbers come from
  std::string cluster;  // cluster preset whose links the collectives ran over ("local-cpu" for CPU)
};

struct Session {
  int64_t id = 0;
  int64_t device_id = 0;
  std::string kind;  // kernels | collectives | import
  std::string command;
  std::string started_at, finished_at;
  std::string status;  // running | complete | interrupted | failed
};

// One kernel measurement. Shape columns that do not apply are 0 (NULL in the table):
//   GEMM: m, n, k, groups (the GEMM as executed: dgrad rows are (m, k, n), wgrad rows (k, n, m));
//   attention: batch, heads, q_len, kv_len, head_dim, causal;
//   memory-bound ops: m = rows (tokens), n = width; adamw: m = parameters.
// flops and bytes are those the cost model charges for this pass (core/ops.h: GEMM dgrad/wgrad =
// fwd flops; attention backward = 2x forward flops; memory-bound backward = 2x forward bytes).
struct KernelRow {
  int64_t id = 0;
  int64_t device_id = 0;
  int64_t session_id = 0;
  std::string op;            // vocabulary name (core/ops.h op_vocabulary())
  std::string pass = "fwd";  // fwd | bwd | dgrad | wgrad
  std::string dtype = "fp32";
  int64_t m = 0, n = 0, k = 0, groups = 0;
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool causal = false;
  double flops = 0, bytes = 0;
  int reps = 0;
  double median_us = 0, p10_us = 0, p90_us = 0;
  std::string impl;    // kernel that ran ("cblas_sgemm OpenBLAS Zen", a CUDA kernel name)
  std::string source;  // published rows: document and address; "" for measurements
};

// One collective measurement, nccl-tests conventions: `bytes` is nccl-tests "size" (all-reduce: the
// buffer; all-gather: the gathered output; reduce-scatter: the input; all-to-all: one rank's send
// buffer; send_recv: the message); algbw = bytes / time, busbw = algbw * busbw factor.
struct CollectiveRow {
  int64_t id = 0;
  int64_t device_id = 0;
  int64_t session_id = 0;
  std::string op;  // all_reduce | all_gather | reduce_scatter | all_to_all | send_recv
  int group_size = 0;
  int members_per_node = 0;
  int domains = 1;  // scale-up (NVLink / shared-memory) domains the group spans
  int64_t bytes = 0;
  std::string dtype = "fp32";
  int reps = 0;
  double median_us = 0, p10_us = 0, p90_us = 0;
  double algbw_gbps = 0, busbw_gbps = 0;
  std::string transport;  // shm | nvlink | network
  std::string impl;       // "Open MPI 4.1.4", "NCCL 2.27"
  std::string source;
};

struct CalibrationRecord {
  int64_t id = 0;
  int64_t device_id = 0;
  std::string created_at;
  nlohmann::json params;     // mplan.calibration/1 JSON
  nlohmann::json fit;        // fit error per op class
  nlohmann::json rows_used;  // {"kernels": [ids], "collectives": [ids]}
};

// One device of a database with all its kernel and collective rows.
struct DeviceProfile {
  Device device;
  std::vector<KernelRow> kernels;
  std::vector<CollectiveRow> collectives;
};

enum class OpenMode { read_write, read_only };

class ProfileDb {
 public:
  // Opens `path` (":memory:" for a private in-memory DB), creating it when missing, and migrates an
  // older schema. A newer schema, a foreign or corrupt file, an unreadable or locked file give an
  // error that says what to do, and leave the file untouched. read_only never creates or migrates.
  static Expected<ProfileDb> open(const std::string& path, OpenMode mode = OpenMode::read_write);

  int schema_version() const;
  const std::string& path() const { return path_; }
  const Connection& connection() const { return db_; }

  Expected<int64_t> add_device(const Device& d);
  Status update_device(const Device& d);  // by id
  Expected<int64_t> begin_session(int64_t device_id, const std::string& kind, const std::string& command);
  Status finish_session(int64_t session_id, const std::string& status);
  // Each call is one transaction: all rows or none.
  Status insert_kernels(const std::vector<KernelRow>& rows);
  Status insert_collectives(const std::vector<CollectiveRow>& rows);
  Expected<int64_t> add_calibration(const CalibrationRecord& c);

  Expected<std::vector<Device>> devices() const;
  Expected<std::vector<Session>> sessions() const;
  Expected<std::vector<KernelRow>> kernels(int64_t device_id) const;          // 0 = all devices
  Expected<std::vector<CollectiveRow>> collectives(int64_t device_id) const;  // 0 = all devices
  Expected<std::vector<CalibrationRecord>> calibrations() const;
  // Device `device_id` with its rows; an error naming the file when there is no such device.
  Expected<DeviceProfile> device_profile(int64_t device_id) const;

  // Copies device `device_id` of `from` with all its rows into this DB (new ids), in one transaction.
  // Returns the new device id.
  Expected<int64_t> import_device(const ProfileDb& from, int64_t device_id, const std::string& command);

 private:
  ProfileDb(Connection c, std::string path) : db_(std::move(c)), path_(std::move(path)) {}
  Connection db_;
  std::string path_;
};

// The migration that brings the schema from version i to i+1 (index i), as SQL text.
const std::vector<std::string>& schema_migrations();
// Creates a new database at an older schema version (tests of migrations).
Status create_database_at_version(const std::string& path, int version);

}  // namespace mplan::profiles
