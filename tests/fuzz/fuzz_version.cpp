// Fuzz target: model::Version::parse and VersionRange::parse. Properties: a parsed version
// re-parses from its own text to an equal version, orders equal to itself, and a range that
// parses can be asked about that version.
#include "fuzz_common.hpp"
#include "model/version.hpp"

#include <compare>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto version = model::Version::parse(text);
  if (version.ok()) {
    auto again = model::Version::parse(version->text());
    if (!again.ok() || !(*again == *version)) std::abort();
    if (std::is_neq(*version <=> *version)) std::abort();
  }
  auto range = model::VersionRange::parse(text);
  if (range.ok()) {
    (void)range->contains(model::Version{9, 3, 0});
    if (version.ok()) (void)range->contains(*version);
  }
  return 0;
}
