// The one non-cryptographic hash of mplan: 64-bit FNV-1a (Fowler–Noll–Vo). Used for stable keys
// (plan keys, layout keys, cross-validation folds, parameter seeds) and checkpoint checksums, so its
// values must never change: they are stored in runs databases and checkpoint files.
// Note: the offset basis mplan has always used, 1469598103934665603, is one digit short of the
// published FNV-1a basis 14695981039346656037 (a typo once copied into four places). The algorithm
// is FNV-1a all the same; the basis stays, because changing it would change every stored key.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace mplan {

constexpr uint64_t kFnv1aOffset = 1469598103934665603ULL;
constexpr uint64_t kFnv1aPrime = 1099511628211ULL;

// Continues a hash `h` over n bytes (start with kFnv1aOffset); chains over several buffers.
inline uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* c = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= c[i];
    h *= kFnv1aPrime;
  }
  return h;
}

inline uint64_t fnv1a(std::string_view s) { return fnv1a(kFnv1aOffset, s.data(), s.size()); }

// 16 lowercase hex digits of fnv1a(s).
inline std::string fnv1a_hex(std::string_view s) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(s)));
  return buf;
}

}  // namespace mplan
