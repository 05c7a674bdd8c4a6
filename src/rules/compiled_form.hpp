// The compiled form of one rules file as bytes: what compiling the file on its own gives (its slot
// table, rules, `packages:`, `selection:` and the ids it registers), written at build time for the
// shipped files (preparse_main.cpp, into rules/preparsed.hpp's table) and read back when a load
// meets a file whose name and text are the shipped one's, instead of compiling it again
// (docs/records/performance.md, "Issue 40, round 7"). Only the form a load with
// TestCases::count makes is stored; the display name (the path as given) is not in it, and is
// put back where compiling puts it. Internal.
#pragma once

#include "rules/loader_internal.hpp"

#include <string>
#include <string_view>

namespace rules::detail {

// The bytes of a file compiled on its own into part (load_impl's FilePart, compiled with
// TestCases::count); empty when it has no such form: a diagnostic, a compiled test case, or a
// string that should be the file's name and is not.
std::string encode_compiled(const SourceFile& file, const FilePart& part);

// Fills part (fresh: default members) from bytes encode_compiled wrote for a file of file's
// relative name and text, file.name standing for the name it was compiled under. False, with part
// in no particular state, when the bytes do not read back (the caller compiles the file instead).
bool decode_compiled(std::string_view bytes, const SourceFile& file, FilePart& part);

} // namespace rules::detail
