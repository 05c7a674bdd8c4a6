// The hardened input layer: limits every JSON and YAML reader of the program applies before its
// parser or any recursive walk sees the text, so no input can nest deeply enough to overflow a
// stack, expand aliases into billions of nodes or grow a collection without bound. A violation is
// an Error of kind parse whose message is "ORIGIN:LINE: WHAT (limit N)" (exit 3 at the command
// line). Logs are read line by line under their own limits (read_lines), and the limits on the
// work a tree or an environment may cause live here too (walks, environment facts, explained
// records). docs/reliability.md ("Inputs") lists which reader applies which limit and its test.
#pragma once

#include "util/result.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace util {

// Nesting deeper than this is refused: real documents stay below 10 levels, and every walk over a
// parsed tree (ours, nlohmann's, yaml-cpp's) recurses once per level.
inline constexpr std::size_t k_max_input_depth = 64;

struct InputLimits {
  std::size_t max_bytes = 16u << 20;         // the file's size (read_input)
  std::size_t max_depth = k_max_input_depth; // open collections at once
  std::size_t max_nodes = 1'000'000;         // values in the document; YAML aliases count as what they expand to
};

// The file's content, at most limits.max_bytes ("PATH: larger than N bytes (limit N)").
Result<std::string> read_input(const std::filesystem::path& path, const InputLimits& limits = {});

// Logs read line by line (--te-log): a long run's log is large and only a few of its lines
// matter, so the reader holds one line at a time. The limits bound its time and its memory, for
// a file and for standard input alike.
struct LineLimits {
  std::size_t max_bytes = 256u << 20;     // the whole input
  std::size_t max_line_bytes = 16u << 20; // one line
};

// Records that a reader explains one at a time, each at the cost of a full explanation and fix
// search (a TE log's distinct configurations, 14 ms each): at most this many per input (the
// configs-per-log cap); one more is an error naming the cap and its line (exit 3).
inline constexpr std::size_t k_max_explained_records = 50;

// Recursive walks of a tree a probe reads (TE's glob of /usr/local/cuda, CUDNN_HOME, ...): a
// chain of nested directories made the walk cubic in its depth (audit 2026-12-01 item 16: 1,000
// levels 14 s). The libraries such a walk looks for are a few levels down (the toolkit's
// targets/x86_64-linux/lib/stubs is 4); a walk goes no deeper than this (the walk-depth cap) and
// lists at most this many entries (the walk-entries cap); past either it stops, and the command
// ends with an error naming the cap and the directory (exit 3): a walk cut short is no answer.
inline constexpr std::size_t k_max_walk_depth = 16;
inline constexpr std::size_t k_max_walk_entries = 200'000;

// How every error names a cap it met: "more than LIMIT WHAT (limit LIMIT, the CAP)", e.g.
// past_cap("entries", k_max_walk_entries, "walk-entries cap").
std::string past_cap(std::string_view what, std::size_t limit, std::string_view cap);

// A rules tree (--rules, NVTE_DOCTOR_RULES, the shipped and bundle directories) is walked under
// the walk-depth and walk-entries caps above, and what it holds is bounded too: the shipped
// database is 47 files of 0.6 MB. More files than the rule-files cap, one file larger than the
// rule-file cap or more bytes together than the rules-size cap is an error naming the cap and the
// directory (exit 3); the files are not read past it.
inline constexpr std::size_t k_max_rule_files = 4096;
inline constexpr std::size_t k_max_rule_file_bytes = 8u << 20;
inline constexpr std::size_t k_max_rules_bytes = 64u << 20;

// Environment variables recorded as facts (env.NVTE_*, NCCL_*, CUDA_*, CUDNN_* and a few named
// ones), from the node, an image's config or a snapshot: a job's environment holds dozens, and
// every fix search copies the facts once per candidate change, so their number multiplies its
// work (audit 2026-12-01 item 17: 50,000 NVTE_* variables took 10 s). More is refused (the
// environment cap, exit 3).
inline constexpr std::size_t k_max_environment_facts = 4096;

// Calls on_line with each line of path, or of standard input for "-", without its '\n' (a last
// line without one too), in order, holding one line at a time; stops at the first error on_line
// returns and returns it. Reads regular files, FIFOs (a shell's <(...)) and standard input; a
// directory or socket is refused. Past a limit: "ORIGIN: larger than N bytes (limit N)" or
// "ORIGIN:LINE: a line larger than N bytes (limit N)", ORIGIN being the path or "standard input".
Result<void> read_lines(const std::filesystem::path& path, const std::function<Result<void>(std::string_view line)>& on_line,
                        const LineLimits& limits = {});

// Checks JSON text against the limits with a linear scan (strings and escapes skipped), before a
// parser builds a tree from it: "ORIGIN:LINE: nested deeper than 64 levels (limit 64)".
Result<void> check_json(std::string_view text, std::string_view origin, const InputLimits& limits = {});

// The 1-based line of a byte offset in text (for parse errors that carry an offset).
std::size_t line_at_offset(std::string_view text, std::size_t offset);

// check_json, then Json::parse (nlohmann's basic_json, any flavour). A parse error names the line
// ("ORIGIN:LINE: not valid JSON: …"); exceptions never leave (nlohmann also throws out_of_range
// for a number that overflows a double).
template <class Json>
Result<Json> parse_json(std::string_view text, std::string_view origin, const InputLimits& limits = {}) {
  if (auto checked = check_json(text, origin, limits); !checked) return checked.take_error();
  try {
    return Json::parse(text);
  } catch (const typename Json::parse_error& e) {
    std::string what = e.what();
    if (auto pos = what.find("parse error"); pos != std::string::npos) what = what.substr(pos);
    return Error{ErrorKind::parse, std::string(origin) + ":" + std::to_string(line_at_offset(text, e.byte == 0 ? 0 : e.byte - 1)) +
                                       ": not valid JSON: " + what};
  } catch (const typename Json::exception& e) {
    return Error{ErrorKind::parse, std::string(origin) + ": not valid JSON: " + e.what()};
  }
}

// Checks YAML text against the limits with libyaml's event stream: nesting depth, the node budget
// (aliases expanded), an alias inside the node it names (a cycle), and a second document (which
// yaml-cpp's Load would drop silently). For readers that then build their tree with yaml-cpp; the
// libyaml tree of yaml_tree.hpp applies the same checks while it builds.
Result<void> check_yaml(std::string_view text, std::string_view origin, const InputLimits& limits = {});

} // namespace util
