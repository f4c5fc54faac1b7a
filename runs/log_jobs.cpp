// Combining per-rank log files and grouping launches into jobs (see log_jobs.h).
#include "runs/log_jobs.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "core/bounded_input.h"

namespace mplan::runs {

namespace fs = std::filesystem;

namespace {

// "rank10.log" after "rank9.log": digit runs compare by value.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size() - 1));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size() - 1));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2, j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

bool log_like(const fs::path& p) {
  std::string n = p.filename().string(), e = p.extension().string();
  return e == ".log" || e == ".out" || e == ".txt" || e == ".err" || n == "stdout" || n == "stderr";
}

Expected<std::vector<std::string>> expand_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> files, problems;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && log_like(it->path())) found.push_back(it->path().string());
      if (found.empty())
        problems.push_back(p + ": the directory holds no log files (*.log, *.out, *.txt, *.err, stdout, stderr)");
      std::sort(found.begin(), found.end(), natural_less);
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else if (fs::exists(p, ec)) {  // a device, FIFO or socket: refused before reading (core/bounded_input.h)
      problems.push_back(check_input_file(p) + "; check --megatron-log");
    } else {
      problems.push_back(p + ": no such log file or directory; check --megatron-log");
    }
  }
  if (!problems.empty()) return Error(problems);
  return files;
}

// torchrun --log-dir: ".../attempt_3/7/stdout.log" -> 3; -1 outside attempt directories.
int attempt_of(const std::string& path) {
  int found = -1;
  for (const auto& part : fs::path(path)) {
    std::string s = part.string();
    if (s.rfind("attempt_", 0) == 0 && s.size() > 8 &&
        std::all_of(s.begin() + 8, s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      found = std::stoi(s.substr(8));
  }
  return found;
}

// The file name, with its torchrun directories ("attempt_0/7/stdout.log") when the name alone says nothing.
std::string base(const std::string& p) {
  fs::path path(p);
  std::string name = path.filename().string();
  if (name != "stdout.log" && name != "stderr.log" && name != "stdout" && name != "stderr") return name;
  fs::path rank = path.parent_path(), attempt = rank.parent_path();
  return (attempt.filename() / rank.filename() / path.filename()).string();
}

bool contributes(const ScannedLog& f) {
  return std::any_of(f.launches.begin(), f.launches.end(),
                     [](const LogLaunch& l) { return !l.iterations.empty() || l.has_config(); });
}

// The k-th launches of the files of one group, merged into one.
LogLaunch merge_launch(const std::vector<const ScannedLog*>& files, size_t k, std::vector<std::string>& warnings) {
  LogLaunch out;
  const LogLaunch* iters = nullptr;
  for (const ScannedLog* f : files) {
    const LogLaunch& l = f->launches[k];
    if (out.file.empty()) out.file = l.file, out.first_line = l.first_line, out.last_line = l.last_line;
    if (l.has_config() && !out.has_config())
      out.args = l.args, out.bridge_yaml = l.bridge_yaml;
    else if (l.has_config() && (l.args != out.args || l.bridge_yaml != out.bridge_yaml))
      warnings.push_back(l.file + " prints a configuration different from the one used (the first file's)");
    if (!out.padded_vocab && l.padded_vocab) out.padded_vocab = l.padded_vocab;
    if (!l.iterations.empty() && (!iters || l.iterations.size() > iters->iterations.size())) iters = &l;
    out.memory.insert(out.memory.end(), l.memory.begin(), l.memory.end());
    if (out.first_datetime.empty() && !l.first_datetime.empty()) {
      out.first_datetime = l.first_datetime;
      out.first_datetime_line = l.first_datetime_line;
      out.zone = l.zone;
    }
    if (!out.zone && l.zone) out.zone = l.zone;
  }
  if (iters) {
    out.iterations = iters->iterations;
    for (const ScannedLog* f : files) {
      const LogLaunch& l = f->launches[k];
      if (&l != iters && !l.iterations.empty())
        warnings.push_back(l.file + " also has iteration lines for this launch; those of " + iters->file +
                           " were used (more lines)");
    }
    out.file = iters->file;
    out.first_line = iters->first_line;
    out.last_line = iters->last_line;
  }
  for (const ScannedLog* f : files)
    if (f->path != out.file) out.other_files.push_back(f->path);
  return out;
}

// One attempt group: its launches in order.
Expected<std::vector<LogLaunch>> combine_group(const std::vector<const ScannedLog*>& group, std::vector<std::string>& warnings) {
  std::vector<const ScannedLog*> main, memory_only;
  for (const ScannedLog* f : group) {
    if (contributes(*f))
      main.push_back(f);
    else if (!f->launches.empty())
      memory_only.push_back(f);
  }
  if (main.empty()) return std::vector<LogLaunch>{};
  size_t n = main.front()->launches.size();
  for (const ScannedLog* f : main)
    if (f->launches.size() != n) {
      std::vector<std::string> p = {"per-rank log files disagree on how many times the job was started:"};
      for (const ScannedLog* g : main) p.push_back("  " + g->path + ": " + std::to_string(g->launches.size()) + " launch(es)");
      p.push_back(
          "pass the files of one launch at a time (one torchrun attempt directory), or a single combined "
          "log of all ranks");
      return Error(p);
    }
  std::vector<LogLaunch> out;
  for (size_t k = 0; k < n; ++k) out.push_back(merge_launch(main, k, warnings));
  for (const ScannedLog* f : memory_only) {
    if (n == 1) {
      for (const auto& l : f->launches) out[0].memory.insert(out[0].memory.end(), l.memory.begin(), l.memory.end());
      out[0].other_files.push_back(f->path);
    } else {
      warnings.push_back(f->path +
                         ": memory reports of a file without configuration or iteration lines cannot be "
                         "matched to one of " +
                         std::to_string(n) + " launches; ignored");
    }
  }
  return out;
}

int64_t interval_of(const std::vector<LogIteration>& its) {
  std::map<int64_t, int> count;
  for (size_t i = 1; i < its.size(); ++i)
    if (its[i].iteration > its[i - 1].iteration) ++count[its[i].iteration - its[i - 1].iteration];
  int64_t best = 1;
  int n = 0;
  for (auto [d, c] : count)
    if (c > n) best = d, n = c;
  return best;
}

std::string framework_of(const LogLaunch& l, const LogConfig& c) {
  bool ds = false, nemo = false, bridge_mem = false;
  for (const auto& it : l.iterations) {
    ds = ds || it.dialect == LogIteration::Dialect::deepspeed;
    nemo = nemo || it.dialect == LogIteration::Dialect::nemo;
  }
  for (const auto& m : l.memory) bridge_mem = bridge_mem || m.bridge;
  return framework_name(c.source, ds, bridge_mem, nemo);
}

LogJob start_job(LogLaunch l, const LogConfig& c, int index) {
  LogJob j;
  j.index = index;
  j.config = c;
  j.framework = framework_of(l, c);
  j.format = iteration_format_name(l.iterations.front());
  j.launches.push_back(std::move(l));
  return j;
}

std::vector<LogJob> group_jobs(std::vector<LogLaunch> launches) {
  std::vector<LogJob> jobs;
  for (auto& l : launches) {
    LogConfig c = read_log_config(l.args, l.bridge_yaml, l.padded_vocab);
    if (!jobs.empty()) {
      LogJob& j = jobs.back();
      bool same = config_differences(j.config, c).empty();
      int64_t interval = interval_of(j.launches.back().iterations);
      bool from_scratch = l.iterations.front().iteration <= interval;
      if (same && !from_scratch) {
        if (j.config.empty()) j.config = c;
        j.launches.push_back(std::move(l));
        continue;
      }
    }
    jobs.push_back(start_job(std::move(l), c, static_cast<int>(jobs.size()) + 1));
  }
  for (auto& j : jobs) {
    std::vector<std::string> files;
    auto add = [&](const std::string& f) {
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
    };
    for (const auto& l : j.launches) add(l.file);
    for (const auto& l : j.launches)
      for (const auto& f : l.other_files) add(f);
    j.where = base(files.front()) + " lines " + std::to_string(j.launches.front().first_line) + "-" +
              std::to_string(j.launches.back().last_line);
    for (size_t i = 1; i < files.size() && i < 4; ++i) j.where += " + " + base(files[i]);
    if (files.size() > 4) j.where += " + " + std::to_string(files.size() - 4) + " more files";
  }
  return jobs;
}

Error no_iterations(const std::vector<ScannedLog>& files) {
  std::vector<std::string> p;
  std::string names;
  for (const auto& f : files) names += (names.empty() ? "" : ", ") + f.path;
  p.push_back(names +
              ": no training iteration lines found. mplan reads the logs of Megatron-LM (' iteration N/ M | "
              "... | elapsed time per iteration (ms): ... |'), Megatron-DeepSpeed, Megatron-Bridge and NeMo 2.0 "
              "/ Lightning ('train_step_timing in s'); for other frameworks write a CSV of the steps and use "
              "--csv (see docs/runs.md)");
  for (const auto& f : files)
    for (const auto& l : f.launches)
      if (l.has_config() || !l.memory.empty()) {
        p.push_back(f.path +
                    " has the configuration/memory reports of rank 0 but no iteration lines: Megatron prints "
                    "those on the last rank (print_rank_last). Pass that rank's file as well (--megatron-log "
                    "rank0.log --megatron-log rankN.log) or the directory with every rank's file");
        return Error(p);
      }
  return Error(p);
}

}  // namespace

int LogJob::iteration_lines() const {
  int n = 0;
  for (const auto& l : launches) n += static_cast<int>(l.iterations.size());
  return n;
}
int64_t LogJob::first_iteration() const { return launches.front().iterations.front().iteration; }
int64_t LogJob::last_iteration() const { return launches.back().iterations.back().iteration; }

std::string describe_job(const LogJob& j) {
  std::string s = "job " + std::to_string(j.index) + ": " + j.where + ", " + std::to_string(j.iteration_lines()) +
                  " iteration lines (" + std::to_string(j.first_iteration()) + "-" + std::to_string(j.last_iteration()) + ")";
  if (j.launches.size() > 1) s += ", resumed " + std::to_string(j.launches.size() - 1) + "x";
  return s + ", " + j.framework;
}

Expected<LogSet> combine_logs(const std::vector<ScannedLog>& files) {
  LogSet set;
  std::map<int, std::vector<const ScannedLog*>> groups;
  for (const auto& f : files) {
    set.files.push_back(f.path);
    for (const auto& w : f.warnings) set.warnings.push_back(w);
    if (f.launches.empty()) {
      if (files.size() > 1) set.warnings.push_back(f.path + ": nothing mplan reads in it; ignored");
      continue;
    }
    groups[attempt_of(f.path)].push_back(&f);
  }
  std::vector<LogLaunch> launches;
  for (auto& [attempt, g] : groups) {
    auto part = combine_group(g, set.warnings);
    if (!part) return part.error();
    for (auto& l : part.value()) {
      if (l.iterations.empty()) {
        set.warnings.push_back(l.file + " lines " + std::to_string(l.first_line) + "-" + std::to_string(l.last_line) +
                               ": a launch without iteration lines (it stopped before training, or the last rank's "
                               "file is missing); ignored");
        continue;
      }
      launches.push_back(std::move(l));
    }
  }
  if (launches.empty()) return no_iterations(files);
  set.jobs = group_jobs(std::move(launches));
  return set;
}

Expected<LogSet> read_training_logs(const std::vector<std::string>& paths) {
  auto files = expand_paths(paths);
  if (!files) return files.error();
  std::vector<ScannedLog> scanned;
  for (const auto& f : files.value()) {
    auto s = scan_log_file(f);
    if (!s) return s.error();
    scanned.push_back(std::move(s).value());
  }
  return combine_logs(scanned);
}

}  // namespace mplan::runs
