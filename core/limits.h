// Upper bounds of every numeric input mplan reads (model, cluster, job, layout), chosen far above
// any real model or machine (largest published: 126 layers, hidden 53,248, vocab 256k, 256 experts,
// 100k GPUs, B300 dense FP4 15 PFLOP/s) and low enough that every product the tools form stays finite
// and inside int64. A value above its bound is refused with the field named.
#pragma once
#include <cstdint>

namespace mplan {

// model
constexpr int64_t kMaxLayers = 100000;
constexpr int64_t kMaxHidden = int64_t(1) << 20;   // hidden_size
constexpr int64_t kMaxFfn = int64_t(1) << 22;      // ffn / expert ffn hidden sizes
constexpr int64_t kMaxHeads = int64_t(1) << 16;    // attention heads, query groups
constexpr int64_t kMaxHeadDim = int64_t(1) << 14;  // kv_channels, MLA head and LoRA ranks
constexpr int64_t kMaxVocab = int64_t(1) << 24;
constexpr int64_t kMaxExperts = int64_t(1) << 16;
// job and layout
constexpr int64_t kMaxGpus = int64_t(1) << 20;
constexpr int64_t kMaxBatch = int64_t(1) << 24;  // sequences per global batch
constexpr int64_t kMaxSeq = int64_t(1) << 24;    // tokens per sequence
// cluster
constexpr double kMaxPeakTflops = 1e6;     // dense TFLOP/s of one GPU in one precision
constexpr double kMaxBandwidthGbps = 1e6;  // HBM and link bandwidths, GB/s
constexpr double kMaxLatencyUs = 1e7;      // link latencies (10 s)
constexpr double kMaxMemoryGib = 1e6;      // memory of one GPU
constexpr int64_t kMaxSms = int64_t(1) << 16;
constexpr int64_t kMaxNodes = int64_t(1) << 20;

}  // namespace mplan
