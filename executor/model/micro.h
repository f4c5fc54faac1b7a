// Micro: the tokens of one micro-batch as this rank sees them (TP-region order: token n = b * Tl + t
// over the rank's Tl positions of each sequence), with their global positions.
#pragma once
#include <cstdint>
#include <vector>

namespace mplan::exec {

struct Micro {
  int index = 0;                 // micro-batch index on this DP rank
  std::vector<int32_t> tokens;   // (N) input token ids
  std::vector<int32_t> targets;  // (N) next-token ids
  std::vector<int32_t> pos;      // (N) global position of each token
  std::vector<int32_t> seq_pos;  // (Tl) positions of this rank's part of one sequence
};

}  // namespace mplan::exec
