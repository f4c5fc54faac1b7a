// Training-log scanner: one pass over a file, splitting it into launches (see log_scan.h).
#include "runs/log_scan.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/bounded_input.h"
#include "runs/config_yaml.h"
#include "runs/log_text.h"
#include "runs/nemo_log.h"

namespace mplan::runs {

namespace {

constexpr const char* kArgsHeader = "------------------------ arguments ------------------------";

bool maybe_zone(const std::string& s) {
  if (s.find(':') == std::string::npos) return false;
  for (const char* d : {"Mon ", "Tue ", "Wed ", "Thu ", "Fri ", "Sat ", "Sun "})
    if (s.find(d) != std::string::npos) return true;
  size_t t = s.find('T');
  return t != std::string::npos && (s.find('+', t) != std::string::npos || s.find('-', t) != std::string::npos);
}

class Scanner {
 public:
  explicit Scanner(std::string name) { out_.path = std::move(name); }

  void line(const std::string& raw, int n) {
    n_ = n;
    std::string prefix, body = strip_rank_prefix(raw, &prefix);
    if (in_args_ && prefix == args_prefix_) {
      if (body.find("end of arguments") != std::string::npos) {
        in_args_ = false;
        return;
      }
      std::string k, v;
      if (parse_megatron_arg_line(body, k, v)) touch().args.emplace(k, v);
      return;
    }
    if (yaml_ && prefix == yaml_prefix_) {
      if (yaml_->add_line(body)) return;
      end_yaml();
    }
    ordinary(prefix, body);
  }

  ScannedLog finish() {
    end_yaml();
    std::vector<LogLaunch> kept;
    for (auto& l : launches_)
      if (!l.empty()) kept.push_back(std::move(l));
    out_.launches = std::move(kept);
    assign_zones();
    return std::move(out_);
  }

 private:
  LogLaunch& cur() {
    if (launches_.empty()) new_launch();
    return launches_.back();
  }
  LogLaunch& touch() {
    LogLaunch& l = cur();
    if (l.first_line == 0) l.first_line = n_;
    l.last_line = n_;
    return l;
  }
  void new_launch() {
    LogLaunch l;
    l.file = out_.path;
    launches_.push_back(std::move(l));
    iter_prefix_.clear();
  }
  void end_yaml() {
    if (!yaml_) return;
    for (auto& [k, v] : yaml_->values()) touch().bridge_yaml.emplace(k, v);
    yaml_.reset();
  }
  void set_datetime(const std::string& t) {
    LogLaunch& l = cur();
    if (!l.first_datetime.empty() || t.size() < 19) return;
    l.first_datetime = t.substr(0, 19);
    l.first_datetime_line = n_;
  }

  void ordinary(const std::string& prefix, const std::string& body) {
    if (body.find(kArgsHeader) != std::string::npos || is_bridge_config_start(body)) {
      if (!cur().iterations.empty() || cur().has_config()) new_launch();
      touch();
      if (body.find(kArgsHeader) != std::string::npos) {
        in_args_ = true;
        args_prefix_ = prefix;
      } else {
        yaml_.emplace();
        yaml_->add_line(body);
        yaml_prefix_ = prefix;
      }
      return;
    }
    if (body.find("[before the start of training step]") != std::string::npos && !cur().iterations.empty()) new_launch();
    if (auto t = megatron_datetime_line(body); !t.empty())
      set_datetime(t);
    else if (auto t2 = nemo_datetime_line(body); !t2.empty())
      set_datetime(t2);
    if (maybe_zone(body))
      if (auto z = zone_in_line(body)) {
        z->line = n_;
        out_.zones.push_back(*z);
      }
    int64_t orig = 0, padded = 0;
    if (parse_padded_vocab_line(body, orig, padded)) {
      touch().padded_vocab = PaddedVocab{orig, padded};
      return;
    }
    auto it = parse_megatron_iteration_line(body);
    if (!it) it = parse_nemo_iteration_line(body);
    if (it) return iteration(prefix, *it);
    if (auto m = parse_megatron_memory_line(body)) {
      m->line = n_;
      touch().memory.push_back(*m);
    }
  }

  void iteration(const std::string& prefix, LogIteration it) {
    it.line = n_;
    if (!std::isfinite(it.elapsed_ms) || it.elapsed_ms <= 0) {
      out_.warnings.push_back(out_.path + ":" + std::to_string(n_) + ": iteration " + std::to_string(it.iteration) +
                              " has a non-positive or non-finite time per iteration; ignored");
      return;
    }
    LogLaunch& l = cur();
    if (!l.iterations.empty() && it.iteration <= l.iterations.back().iteration) {
      const LogIteration& last = l.iterations.back();
      if (it.dialect == LogIteration::Dialect::nemo && it.nemo_form == "progress-bar" && it.iteration == last.iteration) {
        l.iterations.back() = it;  // a later refresh of the same step's progress bar
        return;
      }
      if (prefix != iter_prefix_ && !iter_prefix_.empty()) {
        if (!warned_ranks_)
          out_.warnings.push_back(out_.path + ": iteration lines of several ranks ('" + iter_prefix_ + "' and '" + prefix +
                                  "'); those of '" + iter_prefix_ + "' were used");
        warned_ranks_ = true;
        return;
      }
      new_launch();
    }
    if (cur().iterations.empty())
      iter_prefix_ = prefix;
    else if (prefix != iter_prefix_)
      return;  // a duplicate from another rank
    if (!it.timestamp.empty()) set_datetime(it.timestamp);
    touch().iterations.push_back(std::move(it));
  }

  // The zone stated nearest before each launch's first timestamp (else the first one after it).
  void assign_zones() {
    const auto& zs = out_.zones;
    int prev_last = 0;
    for (auto& l : out_.launches) {
      int at = l.first_datetime_line > 0 ? l.first_datetime_line : l.first_line;
      const StatedZone* best = nullptr;
      for (const auto& z : zs)
        if (z.line <= at) best = &z;
      if (!best) {
        for (const auto& z : zs)
          if (z.line > at) {
            best = &z;
            break;
          }
      }
      if (best) l.zone = *best;
      if (l.first_datetime.empty() && best && best->line > prev_last && best->line <= l.last_line) {
        l.first_datetime = best->local_time;
        l.first_datetime_line = best->line;
      }
      prev_last = l.last_line;
    }
  }

  ScannedLog out_;
  std::vector<LogLaunch> launches_;
  int n_ = 0;
  bool in_args_ = false, warned_ranks_ = false;
  std::string args_prefix_, yaml_prefix_, iter_prefix_;
  std::optional<ConfigYamlReader> yaml_;
};

}  // namespace

ScannedLog scan_log(std::istream& in, const std::string& name) {
  Scanner s(name);
  std::string physical;
  int n = 0;
  while (std::getline(in, physical)) {
    ++n;
    if (!physical.empty() && physical.back() == '\r') physical.pop_back();
    if (physical.find('\r') == std::string::npos) {
      s.line(physical, n);
      continue;
    }
    size_t start = 0;  // progress bars: '\r'-separated refreshes on one physical line
    while (start <= physical.size()) {
      size_t cr = physical.find('\r', start);
      s.line(physical.substr(start, cr == std::string::npos ? std::string::npos : cr - start), n);
      if (cr == std::string::npos) break;
      start = cr + 1;
    }
  }
  return s.finish();
}

Expected<ScannedLog> scan_log_file(const std::string& path) {
  std::vector<std::string> problems;
  auto text = read_input_file(path, kMaxTableInputBytes, problems);  // regular file or "-", size-capped
  if (!text) return Error(problems);
  std::istringstream in(*text);
  return scan_log(in, path);
}

}  // namespace mplan::runs
