// Helpers shared by the runs subcommands (cmd_runs.cpp, cmd_runs_import.cpp): opening the runs
// database, turning library errors into input errors (exit 2), and table cells where an absent value
// is shown as "—".
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/status.h"
#include "runs/runs_db.h"

namespace mplan::cli {

// Shown in tables for a value the run does not have (stored as NULL).
inline constexpr const char* kAbsent = "—";

// Importers create the database; readers require it, so a mistyped --db is not "no runs".
inline std::unique_ptr<runs::RunsDb> require_db(const std::string& path, bool create = false) {
  auto db = create ? runs::RunsDb::open(path) : runs::RunsDb::open_existing(path);
  if (!db) throw InputError{db.error().message()};
  return std::move(db).value();
}

template <class T>
T require(Expected<T> r) {
  if (!r) throw InputError{r.error().message()};
  return std::move(r).value();
}

inline void require(const Status& s) {
  if (!s) throw InputError{s.error().message()};
}

inline std::string mfu_cell(double mfu) { return mfu > 0 ? fmt_pct(mfu, 2) : kAbsent; }
inline std::string num_cell(double v, int d) { return v > 0 ? fmt(v, d) : kAbsent; }
inline std::string opt_cell(const std::optional<double>& v, int d) { return v ? fmt(*v, d) : kAbsent; }

inline std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string o;
  for (const auto& s : v) o += (o.empty() ? "" : sep) + s;
  return o;
}

// `mplan runs import` (cmd_runs_import.cpp), registered under `mplan runs`.
void add_runs_import_command(CLI::App* runs_cmd, Runner& run);

}  // namespace mplan::cli
