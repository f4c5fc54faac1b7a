// ParamStore: every parameter shard this rank holds, in two flat buffers (dense: reduced over the
// dp x cp group; expert: reduced over the expert-data-parallel group), each entry knowing which part
// of its full logical tensor it holds. Initialisation is a pure function of (seed, logical name,
// global element index), so every layout starts from the same full model; full tensors can be
// gathered (checks, golden tests) and loaded by name; the host reads and writes them through the
// backend (upload/download), never directly.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "executor/backend/backend.h"

namespace mplan::exec {

enum class ParamClass { dense = 0, expert = 1 };
enum class InitKind { normal, ones, zeros };

// Where a local (rows, cols) shard sits in the full (full_rows, full_cols) tensor: local row i is
// global row concat(row_ranges)[i] (rows past the ranges are padding), local column j is
// col_begin + j. 1-D tensors are (n, 1).
struct ShardMap {
  int64_t full_rows = 0, full_cols = 1;
  std::vector<std::pair<int64_t, int64_t>> row_ranges;
  int64_t col_begin = 0;
  static ShardMap whole(int64_t rows, int64_t cols = 1) { return {rows, cols, {{0, rows}}, 0}; }
  static ShardMap rows(int64_t rows, int64_t cols, int64_t begin, int64_t end) { return {rows, cols, {{begin, end}}, 0}; }
  static ShardMap cols(int64_t rows, int64_t cols, int64_t begin) { return {rows, cols, {{0, rows}}, begin}; }
};

struct ParamSpec {
  std::string name;  // logical name, e.g. "layers.3.attn.wq"
  ParamClass cls = ParamClass::dense;
  int64_t rows = 0, cols = 1;  // local shape
  ShardMap map;
  InitKind init = InitKind::normal;
  float stddev = 0.02f;
  bool decay = true;             // AdamW weight decay (matrices yes, norms and biases no)
  bool tp_duplicate = false;     // replicated over tp: counted once (tp rank 0) in the gradient norm
  bool etp_duplicate = false;    // replicated over etp
  bool reduce_tp = false;        // gradients are partial over tp (sequence parallel): all-reduce
  bool reduce_etp = false;       // partial over etp
  bool tied_copy = false;        // last-stage copy of the tied word embedding (not counted in the norm)
  bool embedding_group = false;  // all-reduce gradients over the embedding group (tied word embedding)
};

struct ParamEntry : ParamSpec {
  int64_t offset = 0;  // in the flat buffer of its class
  int64_t numel() const { return rows * cols; }
};

class ParamStore {
 public:
  int add(ParamSpec spec);  // before allocate(); returns the handle
  // Allocates the flat parameter and gradient buffers, each class padded to a multiple of
  // pad[class] elements (the ZeRO shard count), and initialises them from `seed`.
  void allocate(Backend& be, int64_t pad_dense, int64_t pad_expert, uint64_t seed);

  float* w(int h) { return params_[int(entries_[size_t(h)].cls)].data() + entries_[size_t(h)].offset; }
  float* g(int h) { return grads_[int(entries_[size_t(h)].cls)].data() + entries_[size_t(h)].offset; }
  const ParamEntry& entry(int h) const { return entries_[size_t(h)]; }
  const std::vector<ParamEntry>& entries() const { return entries_; }
  Tensor& params(ParamClass c) { return params_[int(c)]; }
  Tensor& grads(ParamClass c) { return grads_[int(c)]; }
  int64_t size(ParamClass c) const { return sizes_[int(c)]; }
  int64_t used(ParamClass c) const { return used_[int(c)]; }
  int find(const std::string& name) const;  // -1 when absent

  // Shards of this rank as bytes (for gathering full tensors on one rank).
  std::string serialize_shards(bool grads = false) const;
  // Assembles full tensors from every rank's serialize_shards() output.
  static std::map<std::string, std::vector<float>> assemble(const std::vector<std::string>& shards);
  // Sets every local shard from full tensors by logical name; returns the names that were missing.
  std::vector<std::string> load_full(const std::map<std::string, std::vector<float>>& full);
  static float init_value(uint64_t seed, const std::string& name, int64_t global_index, InitKind k, float stddev);

 private:
  std::vector<ParamEntry> entries_;
  std::map<std::string, int> by_name_;
  int64_t used_[2] = {0, 0};
  int64_t sizes_[2] = {0, 0};
  Tensor params_[2], grads_[2];
  Backend* be_ = nullptr;  // where the buffers live (set by allocate)
};

// Global row of local row i (or -1 for padding).
int64_t global_row(const ShardMap& m, int64_t i);

}  // namespace mplan::exec
