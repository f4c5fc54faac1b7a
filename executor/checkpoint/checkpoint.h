// Sharded checkpoints: one file per rank (its parameter shards, optimizer moments, step) inside a
// directory per step. Saved atomically: every rank writes "<file>.tmp" and renames it inside
// "step_NNNNNNNN.tmp/"; rank 0 then renames the directory and replaces "latest" (temp + rename), so a
// crash at any point leaves the previous checkpoint intact and "latest" never names a partial one.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace mplan::exec {

struct ArrayRef {
  float* data;
  int64_t n;
};

std::string checkpoint_step_dir(const std::string& root, int step, bool tmp);
std::string checkpoint_rank_file(const std::string& dir, int rank);

// Writes header + arrays + checksum to `path` via `path.tmp` and rename.
Status write_rank_file(const std::string& path, const nlohmann::json& header, const std::vector<ArrayRef>& arrays);
// Reads a rank file written by write_rank_file; `check` sees the header first (e.g. to reject a
// different layout) and the arrays must then have the recorded sizes.
Status read_rank_file(const std::string& path, nlohmann::json* header, const std::vector<ArrayRef>& arrays,
                      const std::function<Status(const nlohmann::json&)>& check = nullptr);

// Rank 0, after every rank wrote its file into the tmp directory: renames it to the final name,
// writes meta.json and points "latest" at it, then removes all but the newest `keep` checkpoints.
// Refused when the run is being aborted or the directory lacks one rank file per meta["world_size"].
Status commit_checkpoint(const std::string& root, int step, const nlohmann::json& meta, int keep = 2);
// Removes the "step_*.tmp" directories a killed run left under `root` (never a committed checkpoint);
// returns how many. Rank 0 calls it when a run starts and when it is aborted.
int remove_partial_checkpoints(const std::string& root);
// Once a run is being aborted (its recorder runs on the watcher thread while the training thread may
// still be mid-step), no new checkpoint directory is started: save_checkpoint refuses after this, and
// no commit runs once it returns (it waits for one under way), so the abort's removal of step_*.tmp
// never races a rename to a committed name.
void stop_checkpoint_writes();
bool checkpoint_writes_stopped();
// The directory "latest" points to, or an error saying there is none.
Expected<std::string> latest_checkpoint(const std::string& root);

}  // namespace mplan::exec
