// String helpers with no domain knowledge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace util {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string to_lower(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// The part of a '/'-separated path after its last '/' (the whole path without one): "libcudnn.so.9"
// of "/usr/lib/libcudnn.so.9", "" of "dir/". Text only; the file system is not asked.
std::string path_file_name(std::string_view path);

// A decimal integer that fills the whole string; nullopt otherwise (no exceptions, no locale).
std::optional<long long> parse_int(std::string_view s);
std::optional<double> parse_double(std::string_view s);

// A Unix time as RFC 3339 in UTC: "2026-12-03T05:45:18Z" (reports, kept answers).
std::string rfc3339(std::int64_t unix_seconds);

// Quotes a word for a POSIX shell so that it is passed as exactly one argument; plain words
// ([A-Za-z0-9_@%+=:,./-]) are returned unchanged.
std::string shell_quote(std::string_view word);

// The text with every byte sequence that is not well-formed UTF-8 replaced by U+FFFD (one per
// maximal ill-formed subpart, as Unicode recommends). Node data is bytes; the formats the doctor
// writes (JSON, Prometheus labels) must be UTF-8 or their readers reject the whole file.
std::string valid_utf8(std::string_view text);

// Text made safe for a terminal: C0 control characters other than newline and tab, DEL and the
// C1 controls (U+0080..U+009F) are shown as \xNN / \u00NN instead of acting (an ESC ] 0 ; title
// BEL in a GPU name would set the window title, ESC [ 2 J clear the screen). With
// Sgr::keep, the few colour sequences the renderers emit themselves (ESC [ 0|1|2|31|32|33|36 m)
// stay; every other ESC is shown.
enum class Sgr { keep, show };
std::string terminal_safe(std::string_view text, Sgr sgr = Sgr::show);
// One line of a value: newline and carriage return shown as \n and \r (a newline in a workload
// name would otherwise split the header line it is printed in).
std::string one_line(std::string_view text);

// Damerau-free Levenshtein distance, for "did you mean" hints.
std::size_t edit_distance(std::string_view a, std::string_view b);

} // namespace util
