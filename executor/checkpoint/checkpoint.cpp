// Sharded checkpoint files (header, raw fp32 arrays, FNV-1a checksum) and atomic commit.
#include "executor/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "core/hash.h"
#include "core/json_fields.h"

namespace mplan::exec {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'M', 'P', 'L', 'A', 'N', 'C', 'K', '1'};

std::string step_name(int step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "step_%08d", step);
  return buf;
}

}  // namespace

std::string checkpoint_step_dir(const std::string& root, int step, bool tmp) {
  return (fs::path(root) / (step_name(step) + (tmp ? ".tmp" : ""))).string();
}

std::string checkpoint_rank_file(const std::string& dir, int rank) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "rank_%05d.bin", rank);
  return (fs::path(dir) / buf).string();
}

Status write_rank_file(const std::string& path, const nlohmann::json& header, const std::vector<ArrayRef>& arrays) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Error("checkpoint: cannot write " + tmp + ": " + std::strerror(errno));
  std::string h = header.dump();
  uint64_t hlen = h.size(), sum = kFnv1aOffset;
  bool ok =
      std::fwrite(kMagic, 1, 8, f) == 8 && std::fwrite(&hlen, 8, 1, f) == 1 && std::fwrite(h.data(), 1, h.size(), f) == h.size();
  for (const ArrayRef& a : arrays) {
    if (!ok) break;
    if (a.n == 0) continue;  // an empty array may have no storage: fwrite(nullptr, ...) is undefined (UBSan)
    ok = std::fwrite(a.data, sizeof(float), size_t(a.n), f) == size_t(a.n);
    sum = fnv1a(sum, a.data, size_t(a.n) * sizeof(float));
  }
  ok = ok && std::fwrite(&sum, 8, 1, f) == 1;
  ok = ok && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return Error("checkpoint: writing " + tmp + " failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Error("checkpoint: cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  return {};
}

Status read_rank_file(const std::string& path, nlohmann::json* header, const std::vector<ArrayRef>& arrays,
                      const std::function<Status(const nlohmann::json&)>& check) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("checkpoint: cannot read " + path);
  char magic[8];
  uint64_t hlen = 0;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&hlen), 8);
  if (!in || std::memcmp(magic, kMagic, 8) != 0 || hlen > (1u << 26))
    return Error("checkpoint: " + path + " is not an mplan checkpoint shard");
  std::string h(hlen, '\0');
  in.read(h.data(), std::streamsize(hlen));
  try {
    *header = nlohmann::json::parse(h);
  } catch (const std::exception& e) {
    return Error("checkpoint: " + path + ": corrupt header (" + e.what() + ")");
  }
  if (check) {
    Status st = check(*header);
    if (!st.ok()) return st;
  }
  uint64_t sum = kFnv1aOffset, stored = 0;
  for (const ArrayRef& a : arrays) {
    if (a.n == 0) continue;  // nothing stored (and possibly no storage), as in write_rank_file
    in.read(reinterpret_cast<char*>(a.data), std::streamsize(size_t(a.n) * sizeof(float)));
    sum = fnv1a(sum, a.data, size_t(a.n) * sizeof(float));
  }
  in.read(reinterpret_cast<char*>(&stored), 8);
  if (!in) return Error("checkpoint: " + path + " is truncated");
  if (in.peek() != EOF) return Error("checkpoint: " + path + " has trailing bytes (written by a different layout?)");
  if (stored != sum) return Error("checkpoint: " + path + " fails its checksum; the file is corrupt");
  return {};
}

namespace {
// Removes a committed checkpoint without ever leaving it half deleted under its committed name (a kill
// during remove_all did: scripts/stress): renamed to "<dir>.old.tmp" first, which
// remove_partial_checkpoints clears at the next start if the removal is cut short.
void discard_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  const std::string doomed = dir + ".old.tmp";
  fs::remove_all(doomed, ec);
  fs::rename(dir, doomed, ec);
  if (!ec) fs::remove_all(doomed, ec);  // a failed rename keeps the (complete) checkpoint
}
}  // namespace

namespace {
// The stop of an aborted run and a commit exclude each other: an abort's cleanup of step_*.tmp once
// raced a commit on the training thread (the shards were removed, then meta.json was written into
// the emptied directory and it was renamed to its committed name: scripts/stress, a committed
// checkpoint without rank_00000.bin). After stop_checkpoint_writes returns, no commit starts or runs.
std::mutex g_commit_mutex;
std::atomic<bool> g_writes_stopped{false};

// Counts the "rank_NNNNN.bin" files in `dir`: a commit needs one per rank.
int count_rank_files(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("rank_", 0) == 0 && f.size() > 4 && f.compare(f.size() - 4, 4, ".bin") == 0) ++n;
  }
  return n;
}
}  // namespace

Status commit_checkpoint(const std::string& root, int step, const nlohmann::json& meta, int keep) {
  std::lock_guard<std::mutex> lock(g_commit_mutex);
  if (g_writes_stopped) return Error("checkpoint: the run is being aborted");
  std::error_code ec;
  const std::string tmp = checkpoint_step_dir(root, step, true), fin = checkpoint_step_dir(root, step, false);
  const int ranks = meta.value("world_size", 1), found = count_rank_files(tmp);
  if (found != ranks)
    return Error("checkpoint: " + tmp + " holds " + std::to_string(found) + " rank file(s), not " + std::to_string(ranks) +
                 "; not committed");
  std::string err = write_text_file_atomic((fs::path(tmp) / "meta.json").string(), meta.dump(2) + "\n");
  if (!err.empty()) return Error("checkpoint: " + err);
  discard_checkpoint(fin);
  fs::rename(tmp, fin, ec);
  if (ec) return Error("checkpoint: cannot rename " + tmp + " to " + fin + ": " + ec.message());
  err = write_text_file_atomic((fs::path(root) / "latest").string(), step_name(step) + "\n");
  if (!err.empty()) return Error("checkpoint: " + err);
  // prune: keep the newest `keep` committed checkpoints (and never the one just written)
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("step_", 0) == 0 && n.find(".tmp") == std::string::npos) dirs.push_back(n);
  }
  std::sort(dirs.begin(), dirs.end());
  for (size_t i = 0; i + size_t(keep) < dirs.size(); ++i)
    if (dirs[i] != step_name(step)) discard_checkpoint((fs::path(root) / dirs[i]).string());
  return {};
}

void stop_checkpoint_writes() {
  std::lock_guard<std::mutex> lock(g_commit_mutex);  // waits for a commit under way to finish
  g_writes_stopped = true;
}
bool checkpoint_writes_stopped() { return g_writes_stopped; }

int remove_partial_checkpoints(const std::string& root) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind("step_", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0 && e.is_directory(ec))
      stale.push_back(e.path());
  }
  int removed = 0;
  for (const auto& p : stale) removed += fs::remove_all(p, ec) > 0 ? 1 : 0;
  return removed;
}

Expected<std::string> latest_checkpoint(const std::string& root) {
  std::ifstream in((fs::path(root) / "latest").string());
  std::string name;
  if (!in || !(in >> name))
    return Error("--resume: no checkpoint in " + root + " (missing 'latest'); run without --resume first");
  fs::path dir = fs::path(root) / name;
  if (!fs::is_directory(dir)) return Error("--resume: " + root + "/latest names " + name + ", which does not exist");
  return dir.string();
}

}  // namespace mplan::exec
