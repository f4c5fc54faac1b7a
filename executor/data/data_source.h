// Training data: a byte-level tokenizer (token = byte value, vocabulary 256) over a text corpus,
// or synthetic sequences. Sequence j of the run is a pure function of (seed, j), and step s uses
// sequences [s*gbs, (s+1)*gbs), so the data position of a checkpoint is just its step, and every
// layout sees the same sequences in the same micro-batches.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "executor/model/dims.h"
#include "executor/model/micro.h"

namespace mplan::exec {

// Byte-level tokenizer: ids 0..255 are the bytes of the UTF-8 text.
struct ByteTokenizer {
  static constexpr int64_t kVocab = 256;
  static std::vector<int32_t> encode(const std::string& text);
  static std::string decode(const std::vector<int32_t>& ids);
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The S + 1 tokens of global sequence `index` (inputs are [0, S), targets [1, S]).
  virtual void sequence(int64_t index, int64_t S, int32_t* out) const = 0;
  virtual std::string describe() const = 0;
};

// Each sequence repeats a random 8-token pattern, so a model can learn it (loss falls below ln V).
std::unique_ptr<DataSource> make_synthetic_data(uint64_t seed, int64_t vocab);
// Windows of S + 1 bytes at seeded random offsets of a text file.
Expected<std::unique_ptr<DataSource>> make_corpus_data(const std::string& path, uint64_t seed, int64_t vocab, int64_t S);

// Fixed sequences (each of S + 1 tokens); sequence j is seqs[j % n]. For tests.
std::unique_ptr<DataSource> make_fixed_data(std::vector<std::vector<int32_t>> seqs);

// Micro-batch `mb` of this DP rank at optimizer step `step` (0-based), as this rank sees it.
Micro make_micro(const DataSource& src, const LayoutDims& d, int64_t step, int mb);

}  // namespace mplan::exec
