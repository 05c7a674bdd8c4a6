#include "report/style.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <set>

namespace report {

std::string Style::wrap(std::string_view code, std::string_view s) const {
  if (!m_color) return std::string(s);
  return "\033[" + std::string(code) + "m" + std::string(s) + "\033[0m";
}

std::string Style::mark(model::Severity severity) const {
  switch (severity) {
  case model::Severity::error: return red("✗");
  case model::Severity::warning: return yellow("!");
  case model::Severity::info: return cyan("i");
  }
  return "?";
}

std::string outcome_text(const model::FixOutcome& outcome) {
  if (outcome.backend.empty()) return "clears " + outcome.clears;
  return outcome.backend + (outcome.sub_backend.empty() ? "" : " (" + outcome.sub_backend + ")");
}

std::string render_fix(const model::Fix& fix, const Style& style, std::size_t indent) {
  std::string pad(indent, ' ');
  std::string out;
  std::string description = fix.description;
  std::string verdict;
  if (fix.verified) {
    // The search's own fixes describe their changes ("with cuDNN 9.11.0.98 ..."): one line.
    if (description.starts_with("with ")) {
      verdict = "verified: " + description + " → " + outcome_text(*fix.verified);
      description.clear();
    } else {
      verdict = "verified → " + outcome_text(*fix.verified);
    }
  } else if (!fix.unverified_reason.empty()) {
    verdict = "unverified: " + fix.unverified_reason;
  }
  if (fix.command.empty()) {
    out = pad + "fix: " + wrap_text(description.empty() ? verdict : description, indent + 5) + "\n";
    if (!description.empty() && !verdict.empty()) out += pad + "     " + wrap_text(verdict, indent + 5) + "\n";
    return out;
  }
  out = pad + "fix: " + style.bold(fix.command) + "\n";
  if (!description.empty()) out += pad + "     " + wrap_text(description, indent + 5) + "\n";
  if (!verdict.empty()) {
    std::string line = wrap_text(verdict, indent + 5);
    out += pad + "     " + (fix.verified ? style.green(line) : style.yellow(line)) + "\n";
  }
  return out;
}

namespace {

// The settings a fix changes that its command does not make (a Megatron-LM argument, a TE call
// argument): "--attention-backend auto", "cp_comm_type=p2p".
std::vector<std::string> settings_beside_command(const model::Fix& fix) {
  std::vector<std::string> out;
  bool packing = false;
  for (const auto& [name, value] : fix.changes) packing = packing || name == "workload.qkv_format";
  for (const auto& [name, value] : fix.changes) {
    if (!name.starts_with("workload.") || (packing && name == "workload.attn_mask_type")) continue;
    std::string key = name.substr(9);
    out.push_back(key == "attention_backend" ? "--attention-backend " + value : key + "=" + value);
  }
  return out;
}

// What identifies a fix on screen: its command, else its changes, else its words.
std::string shown_key(const model::Fix& fix) {
  std::string key = fix.command;
  for (const auto& [name, value] : fix.changes) key += "\x1f" + name + "=" + value;
  return key.empty() ? fix.description : key;
}

// A fix as text shows it without -v: how a release is built from source (rules/catalog/) is
// one short clause; JSON and -v keep the whole note.
model::Fix brief(const model::Fix& fix) {
  static constexpr std::string_view k_build = "; no prebuilt wheel for this node (";
  auto at = fix.description.find(k_build);
  if (at == std::string::npos) return fix;
  int depth = 1;
  std::size_t end = at + k_build.size();
  for (; end < fix.description.size() && depth > 0; ++end) {
    if (fix.description[end] == '(') ++depth;
    else if (fix.description[end] == ')') --depth;
  }
  model::Fix out = fix;
  out.description = fix.description.substr(0, at) + "; a source build here (-v says how)" + fix.description.substr(end);
  return out;
}

} // namespace

std::string fix_headline(const model::Fix& fix) {
  std::string what = fix.command.empty() ? fix.description : fix.command;
  if (fix.command.empty() && what.starts_with("with ")) what.erase(0, 5); // "--attention-backend auto in the Megatron-LM arguments"
  // A command and a setting together (TE upgraded and --attention-backend auto): both, or the
  // command alone would not do what the outcome says.
  if (!fix.command.empty())
    for (const auto& setting : settings_beside_command(fix)) what += " and " + setting;
  return what + (fix.verified && !fix.verified->backend.empty() ? " (verified → " + outcome_text(*fix.verified) + ")" : " (verified)");
}

std::string render_fixes(const std::vector<model::Fix>& fixes, const Style& style, std::size_t indent, bool verbose,
                         std::set<std::string>* shown) {
  std::string pad(indent, ' ');
  std::string out;
  std::set<std::string> own; // within this finding, when the caller keeps no record
  std::set<std::string>& seen = shown ? *shown : own;
  std::size_t slots = 0, hidden = 0;
  std::vector<const model::Fix*> counterfactual, debug, refuted;
  std::vector<std::string> footnotes; // why each unverified command could not be checked, once each
  for (const auto& fix : fixes)
    if (!fix.verified && !fix.refuted && fix.kind != "debug" && !fix.command.empty() && !fix.unverified_reason.empty() &&
        std::find(footnotes.begin(), footnotes.end(), fix.unverified_reason) == footnotes.end())
      footnotes.push_back(fix.unverified_reason);
  auto tag = [&](const std::string& reason) {
    if (footnotes.size() < 2) return std::string("[unverified]");
    return "[unverified " + std::to_string(std::find(footnotes.begin(), footnotes.end(), reason) - footnotes.begin() + 1) + "]";
  };
  for (const auto& fix : fixes) {
    if (is_counterfactual(fix)) {
      counterfactual.push_back(&fix);
      continue;
    }
    if (fix.kind == "debug") {
      debug.push_back(&fix);
      continue;
    }
    if (fix.refuted) {
      refuted.push_back(&fix);
      continue;
    }
    // No fix twice: within a finding, nor (with a record) across the findings of one workload,
    // where the later one only points back.
    if (!fix.refuted && (fix.verified || !fix.command.empty()) && !seen.insert(shown_key(fix)).second) {
      if (fix.verified && &seen != &own) out += pad + "fix: " + style.dim(fix_headline(fix) + " (as above)") + "\n";
      continue;
    }
    if (fix.verified) {
      if (!verbose && slots == 3) {
        ++hidden;
        continue;
      }
      ++slots;
      out += render_fix(verbose ? fix : brief(fix), style, indent);
    } else if (!fix.unverified_reason.empty() && !fix.command.empty()) {
      // One short tag; the reason once, below.
      out += pad + "fix: " + style.bold(fix.command) + "  " + style.yellow(tag(fix.unverified_reason)) + "\n";
      if (verbose && !fix.description.empty()) out += pad + "     " + wrap_text(fix.description, indent + 5) + "\n";
    } else {
      out += render_fix(fix, style, indent);
    }
  }
  if (hidden)
    out += pad + style.dim("(" + std::to_string(hidden) + " more verified fix" + (hidden == 1 ? "" : "es") + "; -v shows them)") + "\n";
  for (const auto& reason : footnotes) {
    std::string label = tag(reason) + " ";
    out += pad + style.dim(label + wrap_text("not checked: " + reason, indent + label.size())) + "\n";
  }
  if (!counterfactual.empty()) {
    // The changes only (with -v also what the workload then gets), on one line.
    std::vector<std::string> parts;
    for (const auto* fix : counterfactual) {
      std::string label = fix->description.starts_with("with ") ? fix->description.substr(5) : fix->description;
      if (auto semi = label.find(';'); semi != std::string::npos) label.resize(semi);
      for (std::string_view noise : {" in the workload"})
        for (auto at = label.find(noise); at != std::string::npos; at = label.find(noise)) label.erase(at, noise.size());
      parts.push_back(verbose ? label + " → " + outcome_text(*fix->verified) : label);
    }
    out += pad + style.dim(wrap_text("would also run (not a change you can make here): " + util::join(parts, "; "), indent)) + "\n";
  }
  for (const auto* fix : debug)
    out += pad + "debug: " + fix->command + (verbose && !fix->description.empty() ? "  " + style.dim("(" + fix->description + ")") : "") + "\n";
  if (verbose)
    for (const auto* fix : refuted)
      out += pad + style.dim(wrap_text("would not help: " + (fix->command.empty() ? fix->description : fix->command) + ": " +
                                       fix->unverified_reason, indent + 4)) + "\n";
  return out;
}

std::string wrap_text(std::string_view text, std::size_t indent, std::size_t width) {
  // Rule messages are YAML block scalars with hard line breaks: a single newline is a space, a
  // blank line starts a new paragraph.
  std::string out;
  std::string pad(indent, ' ');
  std::string flowing(util::trim(text));
  std::vector<std::string> paragraphs(1);
  for (std::size_t i = 0; i < flowing.size(); ++i) {
    if (flowing[i] == '\n') {
      if (i + 1 < flowing.size() && flowing[i + 1] == '\n') {
        while (i + 1 < flowing.size() && flowing[i + 1] == '\n') ++i;
        paragraphs.emplace_back();
      } else {
        paragraphs.back() += ' ';
      }
    } else {
      paragraphs.back() += flowing[i];
    }
  }
  bool first_line = true;
  for (const auto& paragraph : paragraphs) {
    std::size_t column = indent;
    if (!first_line) out += "\n" + pad;
    first_line = false;
    bool first_word = true;
    for (auto word : util::split(paragraph, ' ')) {
      if (word.empty()) continue;
      if (!first_word && column + 1 + word.size() > width) {
        out += "\n" + pad;
        column = indent;
        first_word = true;
      }
      if (!first_word) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
      first_word = false;
    }
  }
  return out;
}

} // namespace report
