// A cryptographic digest (BLAKE2b-256, libsodium) for a cache key that stands for its whole
// question: check's fix answers are kept under the digest of the facts, the rules and the
// workload, and a key nobody can make collide (facts come from an image or a user's tree, rules
// from a user's directory) lets the cache store the answer without the question. Fields are
// length-prefixed, so ("a", "bc") and ("ab", "c") differ. Not for change detection: the
// fingerprints of util/hash.hpp are cheaper there.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace util {

class Digest256 {
public:
  Digest256();
  ~Digest256();
  Digest256(Digest256&&) noexcept;
  Digest256& operator=(Digest256&&) noexcept;

  // One field: its length, then its bytes.
  Digest256& field(std::string_view bytes);
  // The digest of the fields so far, 64 hex digits; the object takes no more fields after.
  std::string hex();

private:
  struct State;
  std::unique_ptr<State> m_state;
  bool m_final = false;
};

} // namespace util
