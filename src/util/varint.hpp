// Unsigned LEB128 ("varint"): 7 bits per byte, low bits first, the high bit set on every byte but
// the last. The one encoding of the binary forms the build stores in the binary (the shipped
// rules' YAML trees, util/yaml_tree.cpp, and their compiled form, rules/compiled_form.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace util {

inline void append_varint(std::string& out, std::uint64_t v) {
  do {
    auto byte = static_cast<unsigned char>(v & 0x7f);
    v >>= 7;
    if (v) byte |= 0x80;
    out.push_back(static_cast<char>(byte));
  } while (v);
}

// The number at `at`, which moves past it; nullopt when the bytes end first or it is longer than
// ten bytes (`at` is then left anywhere: the caller treats the whole input as unreadable).
inline std::optional<std::uint64_t> read_varint(std::string_view bytes, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= bytes.size()) break;
    auto byte = static_cast<unsigned char>(bytes[at++]);
    v |= std::uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return v;
  }
  return std::nullopt;
}

} // namespace util
