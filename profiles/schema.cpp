// Schema migrations of the profile database, oldest first. Migration i brings user_version i to i+1.
// Never edit a released migration: append a new one (and document it in docs/profiles.md).
#include <string>
#include <vector>

#include "profiles/profile_db.h"

namespace mplan::profiles {

const std::vector<std::string>& schema_migrations() {
  static const std::vector<std::string> m = {
      // 0 -> 1: devices and measurements.
      R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta(key, value) VALUES ('application', 'mplan.profiles');
CREATE TABLE devices(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('cpu', 'gpu')),
  name TEXT NOT NULL,
  host TEXT NOT NULL DEFAULT '',
  peak_tflops TEXT NOT NULL DEFAULT '{}',
  hbm_gbps REAL NOT NULL DEFAULT 0,
  memory_gib REAL NOT NULL DEFAULT 0,
  sm_count INTEGER NOT NULL DEFAULT 0,
  driver TEXT NOT NULL DEFAULT '',
  libraries TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL);
CREATE TABLE kernels(
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id),
  op TEXT NOT NULL,
  pass TEXT NOT NULL CHECK (pass IN ('fwd', 'bwd', 'dgrad', 'wgrad')),
  dtype TEXT NOT NULL,
  m INTEGER, n INTEGER, k INTEGER, groups INTEGER,
  batch INTEGER, heads INTEGER, q_len INTEGER, kv_len INTEGER, head_dim INTEGER, causal INTEGER,
  flops REAL NOT NULL,
  bytes REAL NOT NULL,
  reps INTEGER NOT NULL,
  median_us REAL NOT NULL CHECK (median_us > 0),
  p10_us REAL NOT NULL,
  p90_us REAL NOT NULL);
CREATE TABLE collectives(
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id),
  op TEXT NOT NULL CHECK (op IN ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all', 'send_recv', 'broadcast')),
  group_size INTEGER NOT NULL CHECK (group_size >= 2),
  members_per_node INTEGER NOT NULL,
  bytes INTEGER NOT NULL CHECK (bytes > 0),
  dtype TEXT NOT NULL,
  reps INTEGER NOT NULL,
  median_us REAL NOT NULL CHECK (median_us > 0),
  p10_us REAL NOT NULL,
  p90_us REAL NOT NULL,
  algbw_gbps REAL NOT NULL,
  busbw_gbps REAL NOT NULL);
)sql",
      // 1 -> 2: profiling sessions (Ctrl-C keeps completed batches of a session), provenance of rows
      // (kernel implementation, published source), the scale-up domains a collective spans, and the
      // calibrations fitted from the rows.
      R"sql(
ALTER TABLE devices ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE devices ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
CREATE TABLE sessions(
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id),
  kind TEXT NOT NULL,
  command TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted', 'failed')));
ALTER TABLE kernels ADD COLUMN session_id INTEGER REFERENCES sessions(id);
ALTER TABLE kernels ADD COLUMN impl TEXT NOT NULL DEFAULT '';
ALTER TABLE kernels ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE collectives ADD COLUMN session_id INTEGER REFERENCES sessions(id);
ALTER TABLE collectives ADD COLUMN domains INTEGER NOT NULL DEFAULT 1;
ALTER TABLE collectives ADD COLUMN transport TEXT NOT NULL DEFAULT '';
ALTER TABLE collectives ADD COLUMN impl TEXT NOT NULL DEFAULT '';
ALTER TABLE collectives ADD COLUMN source TEXT NOT NULL DEFAULT '';
UPDATE collectives SET domains = (group_size + members_per_node - 1) / members_per_node WHERE members_per_node > 0;
CREATE TABLE calibrations(
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id),
  created_at TEXT NOT NULL,
  params TEXT NOT NULL,
  fit TEXT NOT NULL,
  rows_used TEXT NOT NULL);
CREATE INDEX kernels_by_device_op ON kernels(device_id, op);
CREATE INDEX collectives_by_device_op ON collectives(device_id, op);
)sql",
  };
  return m;
}

}  // namespace mplan::profiles
