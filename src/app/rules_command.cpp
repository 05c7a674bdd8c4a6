// `rules list | show ID | lint [DIR...]`.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/rules_update.hpp"
#include "rules/builtin_findings.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace app {

namespace {

// Where the rules in use come from: an updated bundle (with its source) or the directories.
std::string rules_source(const Options& options) {
  auto dirs = rules_directories(options);
  if (auto bundle = active_bundle(options); bundle && dirs.size() == 1 && dirs.front() == *bundle) {
    if (auto description = bundle_description(*bundle)) return *description + " in " + bundle->string();
  }
  std::vector<std::string> names;
  names.reserve(dirs.size());
  for (const auto& dir : dirs) names.push_back(dir.string());
  return util::join(names, ", ");
}

} // namespace

int run_rules_list(const Options& options) {
  rules::RuleSet rules = load_rules(options);
  auto summaries = rules.rule_summaries();
  const std::string source = rules_source(options);
  if (options.format == Format::json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& r : summaries) {
      list.push_back({{"id", r.id}, {"severity", std::string(model::to_string(r.severity))}, {"area", r.area},
                      {"kind", r.kind}, {"backend", r.backend}, {"title", r.title}, {"file", r.file}, {"line", r.line}});
    }
    write_output(options, util::json_text(nlohmann::ordered_json{{"rules_digest", rules.digest()}, {"source", source}, {"rules", list}}, 2) + "\n");
    return 0;
  }
  std::size_t width = 0;
  for (const auto& r : summaries) width = std::max(width, r.id.size());
  std::string out;
  for (const auto& r : summaries) {
    std::string id = r.id;
    id.resize(width + 2, ' ');
    std::string severity(model::to_string(r.severity));
    severity.resize(9, ' ');
    out += id + severity + r.title + "\n";
  }
  out += std::to_string(summaries.size()) + " rules, digest " + rules.digest() + "\n";
  out += "source: " + source + "\n";
  write_output(options, out);
  return 0;
}

int run_rules_show(const Options& options) {
  rules::RuleSet rules = load_rules(options);
  for (const auto& r : rules.rule_summaries()) {
    if (r.id != options.rule_id) continue;
    if (options.format == Format::json) {
      // The rule as written, the fields of the text below (packaging/schema/rules.schema.json#/$defs/show).
      nlohmann::ordered_json applies = nlohmann::ordered_json::array(), fixes = nlohmann::ordered_json::array();
      for (const auto& [fact, range] : r.applies_to) applies.push_back({{"fact", fact}, {"range", range}});
      for (const auto& fix : r.fixes) fixes.push_back({{"kind", fix.kind}, {"command", fix.command}, {"description", fix.description}});
      nlohmann::ordered_json rule{{"id", r.id},
                                  {"title", r.title},
                                  {"severity", std::string(model::to_string(r.severity))},
                                  {"impact", r.impact == model::Impact::none
                                                 ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json(std::string(model::to_string(r.impact)))},
                                  {"area", r.area},
                                  {"kind", r.kind},
                                  {"file", r.file},
                                  {"line", r.line},
                                  {"applies_to", applies},
                                  {"backend", r.backend},
                                  {"effect", r.effect},
                                  {"when", std::string(util::trim(r.when))},
                                  {"message", std::string(util::trim(r.message))},
                                  {"fixes", fixes},
                                  {"references", r.references},
                                  {"tags", r.tags},
                                  {"tests", {{"fires", r.fires_cases}, {"quiet", r.quiet_cases}}}};
      write_output(options, util::json_text(nlohmann::ordered_json{{"rules_digest", rules.digest()}, {"rule", rule}}, 2) + "\n");
      return 0;
    }
    std::string out;
    out += r.id + "  (" + std::string(model::to_string(r.severity)) + ", " + r.kind + ", " + r.file + ":" + std::to_string(r.line) + ")\n";
    out += "title:      " + r.title + "\n";
    out += "area:       " + r.area + "\n";
    if (r.impact != model::Impact::none) out += "impact:     " + std::string(model::describe(r.impact)) + "\n";
    if (r.verdict != model::VerdictEffect::none)
      out += "verdict:    " + std::string(model::to_string(r.verdict)) +
             (r.verdict_backends.empty() ? std::string(" (the workloads it concerns)")
                                         : " (workloads on " + util::join(r.verdict_backends, ", ") + ")") +
             "\n";
    if (!r.explains.empty()) out += "explains:   self-test failures of class " + util::join(r.explains, ", ") + "\n";
    for (const auto& [fact, range] : r.applies_to) out += "applies to: " + fact + " " + range + "\n";
    if (!r.backend.empty()) out += "backend:    " + r.backend + " (" + r.effect + ")\n";
    out += "when:       " + std::string(util::trim(r.when)) + "\n";
    out += "message:    " + std::string(util::trim(r.message)) + "\n";
    for (const auto& fix : r.fixes) out += "fix (" + fix.kind + "): " + fix.command + "\n    " + fix.description + "\n";
    for (const auto& ref : r.references) out += "reference:  " + ref + "\n";
    if (!r.tags.empty()) out += "tags:       " + util::join(r.tags, ", ") + "\n";
    out += "tests:      " + std::to_string(r.fires_cases) + " firing, " + std::to_string(r.quiet_cases) + " quiet\n";
    write_output(options, out);
    return 0;
  }
  // A finding the doctor's own code writes (no rule): its entry in rules/builtin_findings.cpp.
  if (const auto* b = rules::find_builtin_finding(options.rule_id)) {
    std::string out;
    out += std::string(b->id) + "  (" + std::string(b->severity) + ", built in, " + std::string(b->source) + ")\n";
    out += "title:      " + std::string(b->title) + "\n";
    out += "area:       " + std::string(b->area) + "\n";
    out += "when:       written by the doctor's code, not a rule\n";
    out += "message:    " + std::string(b->message) + "\n";
    for (const auto& fix : b->fixes)
      out += "fix (" + std::string(fix.kind) + "): " + std::string(fix.command) + "\n    " + std::string(fix.description) + "\n";
    for (const auto& ref : b->references) out += "reference:  " + std::string(ref) + "\n";
    write_output(options, out);
    return 0;
  }
  throw util::Fatal{"no rule with id '" + options.rule_id + "' (see 'nvte-doctor rules list')"};
}

int run_rules_lint(const Options& options) {
  std::vector<std::filesystem::path> dirs = options.lint_dirs;
  if (dirs.empty()) dirs = rules_directories(options);
  for (const auto& dir : dirs) require_rules_directory(dir);
  auto diagnostics = rules::lint(dirs);
  if (options.format == Format::json) {
    // Every problem on stdout as data (packaging/schema/rules.schema.json#/$defs/lint); the exit
    // code is the text's: 0 clean, 2 problems.
    nlohmann::ordered_json problems = nlohmann::ordered_json::array(), checked = nlohmann::ordered_json::array();
    for (const auto& dir : dirs) checked.push_back(dir.string());
    for (const auto& d : diagnostics)
      problems.push_back({{"file", d.file},
                          {"line", d.line},
                          {"column", d.column},
                          {"length", d.length},
                          {"message", d.message},
                          {"hint", d.hint},
                          {"source_line", d.source_line}});
    write_output(options, util::json_text(nlohmann::ordered_json{{"directories", checked}, {"problems", problems}}, 2) + "\n");
    return diagnostics.empty() ? 0 : 2;
  }
  for (const auto& d : diagnostics) std::fputs((d.rendered() + "\n").c_str(), stderr);
  if (diagnostics.empty()) {
    std::printf("rules lint: no problems in %s\n", dirs.front().c_str());
    return 0;
  }
  std::fprintf(stderr, "rules lint: %zu problem%s\n", diagnostics.size(), diagnostics.size() == 1 ? "" : "s");
  return 2;
}

} // namespace app
