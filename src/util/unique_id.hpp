// Identities for objects whose contents caches key on (the rules engine's memo of a node's facts):
// a number never handed out twice in this process, so a stale cache entry can never match.
#pragma once

#include <atomic>
#include <cstdint>

namespace util {

inline std::uint64_t next_unique_id() {
  static std::atomic<std::uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

} // namespace util
