// Shipped GPU profiles: profiles/data/<cluster preset>.sql, reviewable SQL text with a source per
// number, embedded in the binary and loaded into SQLite on first use (an in-memory database for
// `mplan calibrate --shipped NAME`, or a file with `mplan profile --import NAME --db FILE`).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "profiles/profile_db.h"

namespace mplan::profiles {

std::vector<std::string> shipped_profile_names();
// SQL text of a shipped profile; unknown names list the known ones.
Expected<std::string> shipped_profile_sql(const std::string& name);

// Runs profile SQL text (INSERTs into devices/kernels/collectives of the current schema, device
// ids local to the text) in a fresh in-memory database. `what` names the text in messages.
Expected<ProfileDb> load_profile_sql(const std::string& sql, const std::string& what);
// One device of `db` with its kernel and collective rows as profile SQL text (the format of the
// shipped profiles, device id 1), loadable with import_profile_sql / `mplan profile --import FILE`.
Expected<std::string> export_profile_sql(const ProfileDb& db, int64_t device_id);

// Imports every device of the SQL text (with its rows) into `db`; returns the new device ids.
Expected<std::vector<int64_t>> import_profile_sql(ProfileDb& db, const std::string& sql, const std::string& what);

}  // namespace mplan::profiles
