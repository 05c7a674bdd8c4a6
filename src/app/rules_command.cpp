// `rules list | show ID | lint [DIR...]`.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/rules_update.hpp"
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
  throw util::Fatal{"no rule with id '" + options.rule_id + "' (see 'nvte-doctor rules list')"};
}

int run_rules_lint(const Options& options) {
  std::vector<std::filesystem::path> dirs = options.lint_dirs;
  if (dirs.empty()) dirs = rules_directories(options);
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) throw util::Fatal{"rules directory " + dir.string() + " does not exist"};
  }
  auto diagnostics = rules::lint(dirs);
  for (const auto& d : diagnostics) std::fputs((d.rendered() + "\n").c_str(), stderr);
  if (diagnostics.empty()) {
    std::printf("rules lint: no problems in %s\n", dirs.front().c_str());
    return 0;
  }
  std::fprintf(stderr, "rules lint: %zu problem%s\n", diagnostics.size(), diagnostics.size() == 1 ? "" : "s");
  return 2;
}

} // namespace app
