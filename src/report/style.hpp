// Terminal styling for the text renderers: status marks and ANSI colour, only when asked.
#pragma once

#include "model/finding.hpp"
#include "report/render.hpp"

#include <set>
#include <string>
#include <string_view>

namespace report {

class Style {
public:
  explicit Style(Color color) : m_color(color == Color::yes) {}
  std::string bold(std::string_view s) const { return wrap("1", s); }
  std::string dim(std::string_view s) const { return wrap("2", s); }
  std::string red(std::string_view s) const { return wrap("31", s); }
  std::string yellow(std::string_view s) const { return wrap("33", s); }
  std::string green(std::string_view s) const { return wrap("32", s); }
  std::string cyan(std::string_view s) const { return wrap("36", s); }
  // ✓ (ok), ! (warning), ✗ (error), i (info) in the matching colour.
  std::string mark_ok() const { return green("✓"); }
  std::string mark(model::Severity severity) const;

private:
  std::string wrap(std::string_view code, std::string_view s) const;
  bool m_color;
};

// "fix: <command>" and its description under it; a fix without a command (a hardware change)
// is its description alone. A verified fix says what the model predicts with it
// ("verified: with cuDNN 9.11.0.98 → FusedAttention (F16_arbitrary_seqlen)"); a command the
// model could not check says so ("unverified: ...").
std::string render_fix(const model::Fix& fix, const Style& style, std::size_t indent);
// A finding's fixes: the verified ones the user can make here, best first (at most three unless
// verbose, then a line saying how many more); fixes without a command; commands the model cannot
// check, each with a short [unverified] tag and the reason once below; the counterfactuals (a GPU,
// the model's shape) on one "would also run (not a change you can make here)" line; logging aids
// under "debug:"; with verbose, the commands the model showed do not help ("would not help: ...").
// No fix is printed twice: shown (when given) records what was printed for one workload, and a
// verified fix printed under an earlier finding is one "(as above)" line.
std::string render_fixes(const std::vector<model::Fix>& fixes, const Style& style, std::size_t indent, bool verbose,
                         std::set<std::string>* shown = nullptr);
using model::best_fix;
using model::is_counterfactual;
// "<command> (verified → FusedAttention (F16_arbitrary_seqlen))": a fix on one line; a setting it
// changes beside the command follows it ("... and --attention-backend auto").
std::string fix_headline(const model::Fix& fix);
// "FusedAttention (F16_arbitrary_seqlen)", or "clears <id>" for a node finding.
std::string outcome_text(const model::FixOutcome& outcome);

// Wraps text at width columns, indenting continuation lines by indent spaces.
std::string wrap_text(std::string_view text, std::size_t indent, std::size_t width = 100);

} // namespace report
