// Verified by experiment: a failed check re-run alone with its explaining finding's environment
// fix applied. The decision (which fixes are tried, what a re-run proves) is here; how a check
// runs again is rerun_check's (plan.cpp), injected so that tests need no GPU.
#include "selftest/selftest.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>

namespace selftest {

namespace {

bool valid_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// One shell word's value: 'single quoted' pieces, "double quoted" ones without $ ` \, plain text.
std::optional<std::string> unquote(std::string_view word) {
  std::string out;
  for (std::size_t i = 0; i < word.size();) {
    char c = word[i];
    if (c == '\'' || c == '"') {
      auto end = word.find(c, i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      auto inner = word.substr(i + 1, end - i - 1);
      if (c == '"' && inner.find_first_of("$`\\") != std::string_view::npos) return std::nullopt;
      out += inner;
      i = end + 1;
    } else if (std::string_view("$`\\;&|<>(){}*?").find(c) != std::string_view::npos) {
      return std::nullopt;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// Shell words split on blanks outside quotes.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size()) break;
    std::size_t start = i;
    char quote = 0;
    for (; i < text.size() && (quote || text[i] != ' '); ++i) {
      if (quote && text[i] == quote) quote = 0;
      else if (!quote && (text[i] == '\'' || text[i] == '"')) quote = text[i];
    }
    out.push_back(text.substr(start, i - start));
  }
  return out;
}

// Whether the variable is one a fix may set for the experiment, and whether the re-run recipe
// says it can change the check ("NVTE_" in honours: a prefix).
bool allowed(std::string_view name) {
  return name == "CUDNN_PATH" || name == "CUDNN_HOME" || name == "LD_LIBRARY_PATH" || name.starts_with("NVTE_");
}
bool honoured(const nlohmann::ordered_json& recipe, std::string_view name) {
  if (!recipe.is_object() || !recipe.contains("honours") || !recipe["honours"].is_array()) return false;
  for (const auto& h : recipe["honours"]) {
    if (!h.is_string()) continue;
    const auto& text = h.get_ref<const std::string&>();
    if (text.ends_with('_') ? name.starts_with(text) : name == text) return true;
  }
  return false;
}

} // namespace

std::optional<std::vector<std::pair<std::string, std::string>>> env_assignments(std::string_view command) {
  auto list = words(util::trim(command));
  if (!list.empty() && list.front() == "export") list.erase(list.begin());
  if (list.empty()) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> out;
  for (auto word : list) {
    auto eq = word.find('=');
    if (eq == std::string_view::npos || !valid_name(word.substr(0, eq))) return std::nullopt;
    auto value = unquote(word.substr(eq + 1));
    if (!value) return std::nullopt;
    out.emplace_back(std::string(word.substr(0, eq)), std::move(*value));
  }
  return out;
}

void verify_env_fixes(model::SelftestSummary& summary, const RerunFn& rerun, bool gpu_ran) {
  std::map<std::string, CheckOutcome> done; // recipe + environment -> its re-run
  for (auto& check : summary.checks) {
    if ((check.status != "failed" && check.status != "error") || !check.fix) continue;
    if (!check.fix_verified.empty() || !check.fix_note.empty()) continue; // tried (or ruled out) before
    auto assignments = env_assignments(check.fix->command);
    if (!assignments) continue; // not an environment fix: nothing to try by re-running
    std::map<std::string, std::string> env;
    std::vector<std::string> names, unheard;
    for (const auto& [name, value] : *assignments) {
      if (!allowed(name)) {
        check.fix_note = "not tried: " + name + " is not one of the variables the self-test sets for an experiment";
        env.clear();
        break;
      }
      env[name] = value;
      names.push_back(name);
      if (!honoured(check.rerun, name)) unheard.push_back(name);
    }
    if (env.empty()) continue;
    if (!gpu_ran) {
      check.fix_note = "not tried: no GPU check ran on this node";
      continue;
    }
    if (check.rerun.is_null()) {
      check.fix_note = "not tried: the " + check.check + " check cannot be re-run alone";
      continue;
    }
    if (!unheard.empty()) {
      check.fix_note = "not tried: the " + check.check + " check loads its libraries by path, so " + util::join(unheard, ", ") +
                       " cannot change it (the Python tier's re-run is the experiment)";
      continue;
    }
    std::string key = check.rerun.dump() + "\n" + check.check;
    for (const auto& [name, value] : env) key += "\n" + name + "=" + value;
    auto it = done.find(key);
    if (it == done.end()) it = done.emplace(key, rerun(check, env)).first;
    const CheckOutcome& again = it->second;
    if (again.status == "ok") {
      check.fix_verified = "here";
      check.fix_note = "re-run with " + util::join(names, ", ") + " set: passed";
    } else {
      check.fix_verified = "did_not_help";
      check.fix_note = "re-run with " + util::join(names, ", ") + " set: " + again.status +
                       (again.error.empty() ? "" : " (" + util::one_line(again.error) + ")");
    }
  }
}

} // namespace selftest
