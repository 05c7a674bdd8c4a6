// Edit distance with a limit, for "did you mean" hints on names read from input files.
#pragma once

#include <cstddef>
#include <string_view>

namespace util {

// Damerau-free Levenshtein distance, exact up to limit; a distance above it comes back as
// limit + 1, found as soon as the lengths or a row of the table show it, and only the band of
// cells within the limit of the diagonal is computed. A hint wants only close names, and an
// unknown name of 64 KiB must not cost its length times the length of every known name (the
// fuzzers' slowest inputs were such names). util::edit_distance(a, b) is the unlimited form.
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit);

} // namespace util
