#include "app/rules_loading.hpp"

#include "app/command_io.hpp"
#include "probe/relink.hpp"
#include "util/error.hpp"

namespace app {

rules::RuleSet load_rules(const Options& options) {
  auto dirs = rules_directories(options);
  for (const auto& dir : dirs) require_rules_directory(dir);
  auto loaded = rules::RuleSet::load(dirs, rules::TestCases::count);
  if (!loaded.diagnostics.empty()) {
    const auto& first = loaded.diagnostics.front();
    std::string where = first.line > 0 ? ":" + std::to_string(first.line) + ":" + std::to_string(first.column) : "";
    std::string reason = first.file + where + ": " + first.message;
    if (loaded.diagnostics.size() > 1)
      reason += " (and " + std::to_string(loaded.diagnostics.size() - 1) + " more; run 'nvte-doctor rules lint')";
    throw util::Fatal{reason};
  }
  return std::move(*loaded.rules);
}

rules::SearchOptions fix_search_options() {
  rules::SearchOptions options;
  options.relink = [](model::Facts& facts, std::string_view library) { probe::relink_from_facts(facts, library); };
  return options;
}

} // namespace app
