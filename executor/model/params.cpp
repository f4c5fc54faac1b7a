// ParamStore: registration, flat buffers, layout-independent initialisation, full-tensor gather/load.
#include "executor/model/params.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/hash.h"

namespace mplan::exec {

namespace {

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <class T>
T get(const std::string& in, size_t& pos) {
  if (pos + sizeof(T) > in.size()) throw std::runtime_error("truncated parameter shard stream");
  T v;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}

}  // namespace

int64_t global_row(const ShardMap& m, int64_t i) {
  for (auto [b, e] : m.row_ranges) {
    if (i < e - b) return b + i;
    i -= e - b;
  }
  return -1;
}

float ParamStore::init_value(uint64_t seed, const std::string& name, int64_t gi, InitKind k, float stddev) {
  if (k == InitKind::ones) return 1.0f;
  if (k == InitKind::zeros) return 0.0f;
  return km::init_normal(seed, fnv1a(name), gi, stddev);
}

int ParamStore::add(ParamSpec spec) {
  if (by_name_.count(spec.name)) throw std::logic_error("parameter registered twice: " + spec.name);
  ParamEntry e;
  static_cast<ParamSpec&>(e) = std::move(spec);
  int c = int(e.cls);
  e.offset = used_[c];
  used_[c] += (e.numel() + 15) / 16 * 16;  // 64-byte aligned entries
  int h = int(entries_.size());
  by_name_[e.name] = h;
  entries_.push_back(std::move(e));
  return h;
}

int ParamStore::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

void ParamStore::allocate(Backend& be, int64_t pad_dense, int64_t pad_expert, uint64_t seed) {
  int64_t pads[2] = {std::max<int64_t>(1, pad_dense), std::max<int64_t>(1, pad_expert)};
  for (int c = 0; c < 2; ++c) {
    sizes_[c] = (used_[c] + pads[c] - 1) / pads[c] * pads[c];
    params_[c] = be.alloc({sizes_[c]});
    grads_[c] = be.alloc({sizes_[c]});
  }
  be_ = &be;
  // one backend op per tensor: the name is hashed once, the elements are initialised where the
  // memory lives (a kernel on the GPU)
  std::vector<int64_t> rows;
  for (size_t h = 0; h < entries_.size(); ++h) {
    const ParamEntry& e = entries_[h];
    rows.resize(size_t(e.rows));
    for (int64_t i = 0; i < e.rows; ++i) rows[size_t(i)] = global_row(e.map, i);
    Backend::InitArgs a;
    a.rows = e.rows, a.cols = e.cols, a.full_cols = e.map.full_cols, a.col_begin = e.map.col_begin;
    a.seed = seed, a.name_key = fnv1a(e.name), a.stddev = e.stddev;
    a.normal = e.init == InitKind::normal;
    a.constant = e.init == InitKind::ones ? 1.0f : 0.0f;
    be.init_param(w(int(h)), rows.data(), a);
  }
}

std::string ParamStore::serialize_shards(bool use_grads) const {
  std::string out;
  std::vector<float> host;
  put<int64_t>(out, int64_t(entries_.size()));
  for (const ParamEntry& e : entries_) {
    put<int64_t>(out, int64_t(e.name.size()));
    out += e.name;
    put(out, e.map.full_rows);
    put(out, e.map.full_cols);
    put(out, e.map.col_begin);
    put<int64_t>(out, int64_t(e.map.row_ranges.size()));
    for (auto [b, en] : e.map.row_ranges) {
      put(out, b);
      put(out, en);
    }
    put(out, e.rows);
    put(out, e.cols);
    const float* src = (use_grads ? grads_ : params_)[int(e.cls)].data() + e.offset;
    const size_t at = out.size();
    out.resize(at + size_t(e.numel()) * sizeof(float));
    host.resize(size_t(e.numel()));
    be_->download(host.data(), src, e.numel());
    std::memcpy(&out[at], host.data(), host.size() * sizeof(float));
  }
  return out;
}

std::map<std::string, std::vector<float>> ParamStore::assemble(const std::vector<std::string>& shards) {
  std::map<std::string, std::vector<float>> full;
  for (const std::string& s : shards) {
    size_t pos = 0;
    int64_t n = get<int64_t>(s, pos);
    for (int64_t k = 0; k < n; ++k) {
      int64_t len = get<int64_t>(s, pos);
      std::string name = s.substr(pos, size_t(len));
      pos += size_t(len);
      ShardMap m;
      m.full_rows = get<int64_t>(s, pos);
      m.full_cols = get<int64_t>(s, pos);
      m.col_begin = get<int64_t>(s, pos);
      int64_t nr = get<int64_t>(s, pos);
      for (int64_t r = 0; r < nr; ++r) {
        int64_t b = get<int64_t>(s, pos);
        int64_t e = get<int64_t>(s, pos);
        m.row_ranges.emplace_back(b, e);
      }
      int64_t rows = get<int64_t>(s, pos), cols = get<int64_t>(s, pos);
      std::vector<float>& dst = full[name];
      dst.resize(size_t(m.full_rows * m.full_cols));
      const float* src = reinterpret_cast<const float*>(s.data() + pos);
      for (int64_t i = 0; i < rows; ++i) {
        int64_t gr = global_row(m, i);
        if (gr < 0) continue;
        std::memcpy(dst.data() + gr * m.full_cols + m.col_begin, src + i * cols, size_t(cols) * sizeof(float));
      }
      pos += size_t(rows * cols) * sizeof(float);
    }
  }
  return full;
}

std::vector<std::string> ParamStore::load_full(const std::map<std::string, std::vector<float>>& full) {
  std::vector<std::string> missing;
  for (size_t h = 0; h < entries_.size(); ++h) {
    const ParamEntry& e = entries_[h];
    auto it = full.find(e.name);
    if (it == full.end() || int64_t(it->second.size()) != e.map.full_rows * e.map.full_cols) {
      missing.push_back(e.name);
      continue;
    }
    std::vector<float> shard(size_t(e.numel()));
    for (int64_t i = 0; i < e.rows; ++i) {
      int64_t gr = global_row(e.map, i);
      for (int64_t j = 0; j < e.cols; ++j)
        shard[size_t(i * e.cols + j)] = gr < 0 ? 0.0f : it->second[size_t(gr * e.map.full_cols + e.map.col_begin + j)];
    }
    be_->upload(w(int(h)), shard.data(), e.numel());
  }
  return missing;
}

}  // namespace mplan::exec
