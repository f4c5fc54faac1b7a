// Versioned schema of the runs database: PRAGMA user_version holds the version, PRAGMA
// application_id marks the file as an mplan runs database. Migrations run in order, each in the
// open transaction of RunsDb::open, so a file is either fully migrated or untouched.
#pragma once
#include <sqlite3.h>

#include <cstdint>

namespace mplan::runs {

// 'mplr': distinguishes our files from other programs' SQLite databases.
constexpr int32_t kRunsApplicationId = 0x6d706c72;

// Migrates from `from_version` (0 = empty file) to kRunsSchemaVersion inside the caller's write
// transaction and sets application_id and user_version. Throws SqlError.
void migrate_schema(sqlite3* db, int from_version);

}  // namespace mplan::runs
