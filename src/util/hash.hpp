// Non-cryptographic content hashes for fingerprints and digests (change detection, not security).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace util {

// FNV-1a, 64 bit; feed several pieces by passing the previous result as seed.
constexpr std::uint64_t k_fnv_offset = 1469598103934665603ull;
inline std::uint64_t fnv1a64(std::string_view data, std::uint64_t seed = k_fnv_offset) {
  std::uint64_t hash = seed;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// 16 lowercase hex digits.
inline std::string hex64(std::uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = digits[value & 0xf];
  return out;
}

// Two FNV-1a passes of data (the second seeded differently), 32 hex digits: the name of a cache
// slot that stands for a long key (a link check's objects, check's node fix question).
inline std::string hex_digest128(std::string_view data) { return hex64(fnv1a64(data)) + hex64(fnv1a64(data, fnv1a64("second"))); }

} // namespace util
