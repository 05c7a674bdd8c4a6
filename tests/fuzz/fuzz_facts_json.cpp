// Fuzz target: Facts::from_json (the --facts snapshot loader). Property: what loads writes back
// to JSON that loads again to the same facts (the round trip ARCHITECTURE.md promises).
#include "fuzz_common.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto facts = model::Facts::from_json(fuzz::as_text(data, size), "fuzz.json");
  if (!facts.ok()) return 0;
  auto again = model::Facts::from_json(facts->to_json(), "round-trip.json");
  if (!again.ok() || again->entries() != facts->entries()) std::abort();
  return 0;
}
