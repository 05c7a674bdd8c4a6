// Loading and checking explain case files. The expectation is partial on purpose: only what a
// case states is compared, and listed reasons / findings must be present (others may be too),
// so adding a rule does not break unrelated cases.
#include "rules/explain_cases.hpp"

#include "rules/loader_internal.hpp"
#include "util/file.hpp"
#include "util/yaml_load.hpp"
#include "util/yaml_tree.hpp"
#include "util/strings.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>

namespace rules {

namespace {

class CaseLoader {
public:
  CaseLoader(const detail::SourceFile& file, std::vector<Diagnostic>& diagnostics) : m_file(file), m_diagnostics(diagnostics) {}

  std::vector<ExplainCase> run() {
    std::vector<ExplainCase> cases;
    util::YamlError limit;
    if (!util::YamlDocument::parse(m_file.text, limit) && limit.limit) {
      m_diagnostics.push_back(m_file.at_mark(limit.mark.line, limit.mark.column, limit.message));
      return cases;
    }
    try {
      YAML::Node root = YAML::Load(m_file.text);
      // The tree yaml-cpp built, held to the limits libyaml's reading met (util/yaml_load.hpp).
      if (auto v = util::yaml_cpp_tree_violation(root)) {
        m_diagnostics.push_back(m_file.at_mark(v->mark.line, v->mark.column, v->message));
        return cases;
      }
      if (root.IsNull()) return cases;
      if (!root.IsSequence()) {
        error(root, "an explain case file is a list of {name, facts, workload, expect}");
        return cases;
      }
      for (const auto& item : root) {
        auto c = load(item);
        if (!c) continue;
        for (const auto& other : cases)
          if (other.name == c->name) error(item, "a second case named '" + c->name + "'", "the first is at line " + std::to_string(other.line));
        cases.push_back(std::move(*c));
      }
    } catch (const YAML::Exception& e) {
      m_diagnostics.push_back(m_file.at_mark(e.mark.line, e.mark.column, "malformed YAML: " + e.msg));
    }
    return cases;
  }

private:
  bool error(const YAML::Node& node, std::string message, std::string hint = {}) {
    m_diagnostics.push_back(m_file.at_mark(node.Mark().line, node.Mark().column, std::move(message), std::move(hint)));
    return false;
  }

  static std::optional<std::string> nullable(const YAML::Node& node) {
    if (node.IsNull() || (node.IsScalar() && (node.Scalar() == "null" || node.Scalar() == "~"))) return std::nullopt;
    return node.Scalar();
  }

  bool ids(const YAML::Node& node, std::vector<std::string>& out) {
    if (!node.IsSequence()) return error(node, "expected a list of rule ids");
    for (const auto& item : node) {
      if (!item.IsScalar()) return error(item, "expected a rule id");
      out.push_back(item.Scalar());
    }
    return true;
  }

  std::optional<ExplainCase> load(const YAML::Node& item) {
    if (!item.IsMap()) {
      error(item, "a case is a mapping {name, facts, workload, expect}");
      return std::nullopt;
    }
    ExplainCase c;
    c.file = m_file.name;
    c.line = item.Mark().line + 1;
    bool ok = true;
    for (const auto& entry : item) {
      std::string key = entry.first.Scalar();
      const YAML::Node& value = entry.second;
      if (key == "name") {
        c.name = value.IsScalar() ? value.Scalar() : "";
      } else if (key == "facts") {
        if (!value.IsMap() && !value.IsNull()) ok = error(value, "'facts' is a flat mapping of fact names to values");
        else
          for (const auto& fact : value) {
            if (!fact.second.IsScalar()) {
              ok = error(fact.second, "a fact value must be a scalar");
              continue;
            }
            if (auto r = c.facts.apply_override(fact.first.Scalar() + "=" + fact.second.Scalar()); !r)
              ok = error(fact.first, r.error().message);
          }
      } else if (key == "workload") {
        if (!value.IsMap() && !value.IsNull()) ok = error(value, "'workload' is a mapping of workload keys to values");
        else
          for (const auto& w : value) {
            if (!w.second.IsScalar()) {
              ok = error(w.second, "a workload value must be a scalar");
              continue;
            }
            if (auto r = c.workload.set_text(w.first.Scalar(), w.second.Scalar()); !r) ok = error(w.first, r.error().message);
          }
      } else if (key == "expect") {
        ok = expect(value, c) && ok;
      } else {
        ok = error(entry.first, "unknown case key '" + key + "'", "name, facts, workload, expect");
      }
    }
    if (c.name.empty()) ok = error(item, "a case without 'name'");
    c.facts.derive();
    c.workload.name = c.name;
    if (auto r = c.workload.complete(); !r) ok = error(item, "workload: " + r.error().message);
    if (!ok) return std::nullopt;
    return c;
  }

  bool expect(const YAML::Node& node, ExplainCase& c) {
    if (!node.IsMap()) return error(node, "'expect' is a mapping {selected, te_version, backends, findings}");
    bool ok = true;
    for (const auto& entry : node) {
      std::string key = entry.first.Scalar();
      const YAML::Node& value = entry.second;
      if (key == "selected") {
        c.selected = nullable(value);
      } else if (key == "te_version") {
        if (!value.IsScalar()) ok = error(value, "te_version is a version");
        else c.te_version = value.Scalar();
      } else if (key == "findings") {
        c.findings.emplace();
        if (!value.IsNull()) ok = ids(value, *c.findings) && ok;
      } else if (key == "backends") {
        if (!value.IsMap()) {
          ok = error(value, "'backends' maps flash_attention / fused_attention / unfused_attention to expectations");
          continue;
        }
        for (const auto& backend : value) {
          std::string name = backend.first.Scalar();
          if (name != "flash_attention" && name != "fused_attention" && name != "unfused_attention") {
            ok = error(backend.first, "unknown backend '" + name + "'", "flash_attention, fused_attention, unfused_attention");
            continue;
          }
          BackendExpectation e;
          if (!backend.second.IsMap()) {
            ok = error(backend.second, "a backend expectation is {available, sub_backend, reasons}");
            continue;
          }
          for (const auto& field : backend.second) {
            std::string f = field.first.Scalar();
            if (f == "available") {
              auto b = field.second.IsScalar() ? model::Value::parse_as(model::ValueType::boolean, field.second.Scalar())
                                               : util::Result<model::Value>(util::Error{util::ErrorKind::parse, "not a scalar"});
              if (!b) ok = error(field.second, "available is true or false");
              else e.available = b->as_bool();
            } else if (f == "sub_backend") {
              e.sub_backend = nullable(field.second);
            } else if (f == "reasons") {
              ok = ids(field.second, e.reasons) && ok;
            } else {
              ok = error(field.first, "unknown backend expectation key '" + f + "'", "available, sub_backend, reasons");
            }
          }
          c.backends[name] = std::move(e);
        }
      } else {
        ok = error(entry.first, "unknown expect key '" + key + "'", "selected, te_version, backends, findings");
      }
    }
    return ok;
  }

  const detail::SourceFile& m_file;
  std::vector<Diagnostic>& m_diagnostics;
};

std::string show(const std::optional<std::string>& s) { return s ? *s : "null"; }

} // namespace

std::vector<ExplainCase> load_explain_cases(const std::filesystem::path& file, std::vector<Diagnostic>& diagnostics) {
  auto text = util::read_file(file, 8u << 20);
  if (!text) {
    diagnostics.push_back({file.string(), 0, 0, 1, text.error().message, {}, {}});
    return {};
  }
  detail::SourceFile source(file.string(), file.filename().string(), std::move(*text));
  return CaseLoader(source, diagnostics).run();
}

std::optional<std::string> check_explain_case(const RuleSet& rules, const ExplainCase& c) {
  model::Explanation ex = explain(rules, c.facts, c.workload);
  std::vector<std::string> problems;
  if (c.selected && *c.selected != ex.selected)
    problems.push_back("selected " + show(ex.selected) + ", expected " + show(*c.selected));
  if (c.te_version) {
    auto want = model::Version::parse(*c.te_version);
    auto got = model::Version::parse(ex.te_version);
    if (!want || !got || *want != *got) problems.push_back("modelled TE " + ex.te_version + ", expected " + *c.te_version);
  }
  for (const auto& [name, e] : c.backends) {
    const model::BackendVerdict& verdict = ex.backends[name];
    std::vector<std::string> got_reasons;
    for (const auto& r : verdict.reasons) got_reasons.push_back(r.rule.empty() ? "(" + r.message + ")" : r.rule);
    if (e.available && *e.available != verdict.available)
      problems.push_back(name + " available=" + (verdict.available ? "true" : "false") + ", expected " +
                         (*e.available ? "true" : "false") + " (reasons: " + util::join(got_reasons, ", ") + ")");
    if (e.sub_backend && *e.sub_backend != verdict.sub_backend)
      problems.push_back(name + " sub_backend " + show(verdict.sub_backend) + ", expected " + show(*e.sub_backend));
    for (const auto& id : e.reasons) {
      if (std::find(got_reasons.begin(), got_reasons.end(), id) == got_reasons.end())
        problems.push_back(name + ": no reason from rule " + id + " (reasons: " + util::join(got_reasons, ", ") + ")");
    }
  }
  if (c.findings) {
    std::vector<std::string> got;
    for (const auto& f : ex.findings) got.push_back(f.id);
    if (c.findings->empty() && !got.empty()) problems.push_back("expected no findings, got " + util::join(got, ", "));
    for (const auto& id : *c.findings)
      if (std::find(got.begin(), got.end(), id) == got.end())
        problems.push_back("no finding " + id + " (findings: " + util::join(got, ", ") + ")");
  }
  if (problems.empty()) return std::nullopt;
  return c.file + ":" + std::to_string(c.line) + ": case '" + c.name + "': " + util::join(problems, "; ");
}

} // namespace rules
