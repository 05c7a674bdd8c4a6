#include "util/digest.hpp"

#include <cstdint>
#include <mutex>
#include <sodium.h>
#include <stdexcept>

namespace util {

struct Digest256::State {
  crypto_generichash_state hash;
};

Digest256::Digest256() : m_state(std::make_unique<State>()) {
  // libsodium picks its implementations once per process (thread-safe, idempotent).
  static std::once_flag ready;
  std::call_once(ready, [] {
    if (::sodium_init() < 0) throw std::runtime_error("libsodium did not initialise");
  });
  ::crypto_generichash_init(&m_state->hash, nullptr, 0, 32);
}

Digest256::~Digest256() = default;
Digest256::Digest256(Digest256&&) noexcept = default;
Digest256& Digest256::operator=(Digest256&&) noexcept = default;

Digest256& Digest256::field(std::string_view bytes) {
  if (m_final) throw std::logic_error("Digest256: a field after hex()");
  unsigned char length[8];
  std::uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(n >> (8 * i));
  ::crypto_generichash_update(&m_state->hash, length, sizeof length);
  ::crypto_generichash_update(&m_state->hash, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return *this;
}

std::string Digest256::hex() {
  if (m_final) throw std::logic_error("Digest256: hex() twice");
  m_final = true;
  unsigned char out[32];
  ::crypto_generichash_final(&m_state->hash, out, sizeof out);
  static constexpr char digits[] = "0123456789abcdef";
  std::string text;
  text.reserve(64);
  for (unsigned char b : out) {
    text += digits[b >> 4];
    text += digits[b & 15];
  }
  return text;
}

} // namespace util
