// Byte tokenizer, synthetic and corpus data sources, and micro-batch assembly per rank.
#include "executor/data/data_source.h"

#include <fstream>
#include <sstream>

#include "core/bounded_input.h"
#include "executor/backend/kernel_math.h"

namespace mplan::exec {

namespace {

uint64_t mix(uint64_t x) { return km::splitmix64(x); }  // the one splitmix64 (parameter init uses it too)

class SyntheticData final : public DataSource {
 public:
  SyntheticData(uint64_t seed, int64_t vocab) : seed_(seed), vocab_(vocab) {}
  void sequence(int64_t index, int64_t S, int32_t* out) const override {
    const uint64_t base = mix(seed_ ^ mix(uint64_t(index) + 0x5eed));
    for (int64_t t = 0; t <= S; ++t) out[t] = int32_t(mix(base + uint64_t(t % 8)) % uint64_t(vocab_));
  }
  std::string describe() const override { return "synthetic (repeated 8-token patterns)"; }

 private:
  uint64_t seed_;
  int64_t vocab_;
};

class CorpusData final : public DataSource {
 public:
  CorpusData(std::vector<int32_t> tokens, std::string path, uint64_t seed)
      : tokens_(std::move(tokens)), path_(std::move(path)), seed_(seed) {}
  void sequence(int64_t index, int64_t S, int32_t* out) const override {
    const uint64_t span = uint64_t(int64_t(tokens_.size()) - S - 1) + 1;
    const int64_t off = int64_t(mix(seed_ ^ mix(uint64_t(index))) % span);
    for (int64_t t = 0; t <= S; ++t) out[t] = tokens_[size_t(off + t)];
  }
  std::string describe() const override { return path_ + " (" + std::to_string(tokens_.size()) + " byte tokens)"; }

 private:
  std::vector<int32_t> tokens_;
  std::string path_;
  uint64_t seed_;
};

class FixedData final : public DataSource {
 public:
  explicit FixedData(std::vector<std::vector<int32_t>> seqs) : seqs_(std::move(seqs)) {}
  void sequence(int64_t index, int64_t S, int32_t* out) const override {
    const std::vector<int32_t>& s = seqs_[size_t(index) % seqs_.size()];
    for (int64_t t = 0; t <= S; ++t) out[t] = s[size_t(t) % s.size()];
  }
  std::string describe() const override { return "fixed (" + std::to_string(seqs_.size()) + " sequences)"; }

 private:
  std::vector<std::vector<int32_t>> seqs_;
};

}  // namespace

std::unique_ptr<DataSource> make_fixed_data(std::vector<std::vector<int32_t>> seqs) {
  return std::make_unique<FixedData>(std::move(seqs));
}

std::vector<int32_t> ByteTokenizer::encode(const std::string& text) {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = int32_t(static_cast<unsigned char>(text[i]));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) {
  std::string s(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) s[i] = char(ids[i] & 0xff);
  return s;
}

std::unique_ptr<DataSource> make_synthetic_data(uint64_t seed, int64_t vocab) {
  return std::make_unique<SyntheticData>(seed, vocab);
}

Expected<std::unique_ptr<DataSource>> make_corpus_data(const std::string& path, uint64_t seed, int64_t vocab, int64_t S) {
  std::vector<std::string> problems;
  auto read = path == "-" ? std::nullopt : read_input_file(path, kMaxTableInputBytes, problems);
  if (!read)
    return Error("--data " +
                 (problems.empty() ? path + ": every rank reads the corpus, so it must be a file" : problems.front()) +
                 "; give a text file or 'synthetic'");
  const std::string& text = *read;
  if (vocab < ByteTokenizer::kVocab)
    return Error("--data " + path + ": the byte-level tokenizer needs vocab_size >= 256, the model has " + std::to_string(vocab) +
                 "; use --data synthetic or a larger vocabulary");
  if (int64_t(text.size()) < S + 2)
    return Error("--data " + path + ": " + std::to_string(text.size()) + " bytes is shorter than one sequence of " +
                 std::to_string(S + 1) + " tokens");
  return std::unique_ptr<DataSource>(std::make_unique<CorpusData>(ByteTokenizer::encode(text), path, seed));
}

Micro make_micro(const DataSource& src, const LayoutDims& d, int64_t step, int mb) {
  Micro m;
  m.index = mb;
  m.seq_pos = d.local_positions(d.cp_rank);
  m.tokens.resize(size_t(d.N));
  m.targets.resize(size_t(d.N));
  m.pos.resize(size_t(d.N));
  std::vector<int32_t> seq(size_t(d.S + 1));
  const int64_t per_dp = d.gbs / d.dp;
  for (int64_t b = 0; b < d.B; ++b) {
    const int64_t index = step * d.gbs + d.dp_rank * per_dp + int64_t(mb) * d.B + b;
    src.sequence(index, d.S, seq.data());
    for (int64_t t = 0; t < d.Tl; ++t) {
      const int32_t p = m.seq_pos[size_t(t)];
      m.tokens[size_t(b * d.Tl + t)] = seq[size_t(p)];
      m.targets[size_t(b * d.Tl + t)] = seq[size_t(p) + 1];
      m.pos[size_t(b * d.Tl + t)] = p;
    }
  }
  return m;
}

}  // namespace mplan::exec
