// `explain --fix`: the verified fixes of every finding a user can make on the node, best first,
// for scripts (render.hpp). Counterfactuals (another GPU, another model shape) and logging aids
// are no fix: they are left out, and the rank counts only what is printed.
#include "report/render.hpp"
#include "report/style.hpp"

#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

namespace report {

namespace {

using Json = nlohmann::ordered_json;

struct Listed {
  const model::Explanation* explanation;
  const model::Finding* finding;
  const model::Fix* fix;
  int rank;
};

std::vector<Listed> listed(const std::vector<model::Explanation>& explanations) {
  std::vector<Listed> out;
  for (const auto& e : explanations) {
    for (const auto& f : e.findings) {
      int rank = 0;
      for (const auto& fix : f.fixes) {
        if (!fix.verified || is_counterfactual(fix) || fix.kind == "debug") continue;
        out.push_back({&e, &f, &fix, ++rank});
      }
    }
  }
  return out;
}

std::string outcome(const model::FixOutcome& verified) {
  return verified.backend + (verified.sub_backend.empty() ? "" : "/" + verified.sub_backend);
}

} // namespace

std::string render_fix_list_text(const std::vector<model::Explanation>& explanations) {
  std::string text;
  for (const auto& l : listed(explanations)) {
    std::vector<std::string> changes;
    for (const auto& [name, value] : l.fix->changes) changes.push_back(name + "=" + value);
    std::string then = outcome(*l.fix->verified);
    text += l.explanation->workload.name + "\t" + l.finding->id + "\t" + std::to_string(l.rank) + "\t" + (then.empty() ? "-" : then) + "\t" +
            (l.fix->command.empty() ? "-" : l.fix->command) + "\t" + util::join(changes, ";") + "\n";
  }
  return text;
}

std::string render_fix_list_json(const std::vector<model::Explanation>& explanations) {
  Json list = Json::array();
  for (const auto& l : listed(explanations)) {
    Json changes = Json::object();
    for (const auto& [name, value] : l.fix->changes) changes[name] = value;
    const auto& v = *l.fix->verified;
    list.push_back(Json{{"workload", l.explanation->workload.name},
                        {"finding", l.finding->id},
                        {"rank", l.rank},
                        {"kind", l.fix->kind},
                        {"command", l.fix->command},
                        {"description", l.fix->description},
                        {"changes", changes},
                        {"backend", v.backend.empty() ? Json(nullptr) : Json(v.backend)},
                        {"sub_backend", v.sub_backend.empty() ? Json(nullptr) : Json(v.sub_backend)}});
  }
  return util::json_text(Json{{"schema_version", 1}, {"fixes", list}}, 2) + "\n";
}

} // namespace report
