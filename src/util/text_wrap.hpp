// Wrapping text at a terminal's width.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace util {

// Lines of text longer than width columns broken at spaces, each continuation indented two
// columns past its line's own indentation. Columns count UTF-8 characters and skip terminal
// colour sequences (ESC [ ... m). A line with no space to break at stays whole (a long path or
// command is not cut); width 0 leaves the text as it is.
std::string wrap_text(std::string_view text, std::size_t width);

} // namespace util
