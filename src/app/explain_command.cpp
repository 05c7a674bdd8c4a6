// `explain`: TE's backend selection for each workload on this (or a what-if) node; with
// --sweep, a support matrix over the swept values.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/workloads.hpp"
#include "report/render.hpp"
#include "report/te_log_agreement.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <map>

namespace app {

namespace {

struct Sweep {
  std::string key;
  std::vector<std::string> values;
};

std::vector<Sweep> parse_sweeps(const std::vector<std::string>& specs) {
  std::vector<Sweep> sweeps;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw util::Fatal{"--sweep '" + spec + "': expected KEY=V1,V2,..."};
    Sweep s{spec.substr(0, eq), {}};
    // window_size values contain a comma themselves: sweep them separated by ';'.
    char sep = s.key == "window_size" ? ';' : ',';
    for (auto value : util::split(std::string_view(spec).substr(eq + 1), sep)) s.values.emplace_back(util::trim(value));
    sweeps.push_back(std::move(s));
  }
  return sweeps;
}

struct Cell {
  std::vector<std::string> values; // one per sweep key
  model::Explanation explanation;
};

std::string cell_label(const model::Explanation& e) {
  if (!e.selected) return "none";
  std::string label = *e.selected == "UnfusedDotProductAttention" ? "Unfused" : *e.selected == "FlashAttention" ? "Flash" : "Fused";
  auto fused = e.backends.find("fused_attention");
  if (label == "Fused" && fused != e.backends.end() && fused->second.sub_backend) {
    const auto& sub = *fused->second.sub_backend;
    label += sub == "F16_arbitrary_seqlen" ? "/arbitrary" : sub == "F16_max512_seqlen" ? "/max512" : "/" + sub;
  }
  return label;
}

std::string pad(std::string s, std::size_t width) {
  // Pads by code points so the marks stay aligned.
  std::size_t visible = 0;
  for (unsigned char c : s) visible += (c & 0xC0) != 0x80;
  if (visible < width) s.append(width - visible, ' ');
  return s;
}

std::string render_sweep_text(const std::vector<Sweep>& sweeps, const std::vector<Cell>& cells, const std::string& workload) {
  std::string out = "Support matrix for " + workload + " (TE " + (cells.empty() ? "" : cells[0].explanation.te_version) +
                    (cells.empty() || !cells[0].explanation.te_version_assumed ? "" : ", assumed") + ")\n\n";
  if (sweeps.size() == 2) {
    std::size_t width = 8;
    for (const auto& v : sweeps[0].values) width = std::max(width, v.size() + 2);
    for (const auto& v : sweeps[1].values) width = std::max(width, v.size() + 2);
    for (const auto& c : cells) width = std::max(width, cell_label(c.explanation).size() + 2);
    out += pad(sweeps[0].key + " \\ " + sweeps[1].key, std::max(width, sweeps[0].key.size() + sweeps[1].key.size() + 5));
    std::size_t first = std::max(width, sweeps[0].key.size() + sweeps[1].key.size() + 5);
    for (const auto& v : sweeps[1].values) out += pad(v, width);
    out += "\n";
    for (std::size_t r = 0; r < sweeps[0].values.size(); ++r) {
      out += pad(sweeps[0].values[r], first);
      for (std::size_t c = 0; c < sweeps[1].values.size(); ++c) out += pad(cell_label(cells[r * sweeps[1].values.size() + c].explanation), width);
      out += "\n";
    }
    return out;
  }
  std::vector<std::size_t> widths;
  for (const auto& s : sweeps) {
    std::size_t w = s.key.size();
    for (const auto& v : s.values) w = std::max(w, v.size());
    widths.push_back(w + 2);
  }
  for (std::size_t i = 0; i < sweeps.size(); ++i) out += pad(sweeps[i].key, widths[i]);
  out += "selected\n";
  for (const auto& c : cells) {
    for (std::size_t i = 0; i < c.values.size(); ++i) out += pad(c.values[i], widths[i]);
    out += cell_label(c.explanation);
    if (!c.explanation.selected) {
      std::vector<std::string> rules_out;
      for (const auto& [backend, verdict] : c.explanation.backends) {
        for (const auto& reason : verdict.reasons) rules_out.push_back(reason.rule);
      }
      out += "  (" + util::join(rules_out, ", ") + ")";
    }
    out += "\n";
  }
  return out;
}

std::string render_sweep_json(const std::vector<Sweep>& sweeps, const std::vector<Cell>& cells) {
  using Json = nlohmann::ordered_json;
  Json keys = Json::array();
  for (const auto& s : sweeps) keys.push_back(s.key);
  Json list = Json::array();
  for (const auto& c : cells) {
    Json values = Json::object();
    for (std::size_t i = 0; i < sweeps.size(); ++i) values[sweeps[i].key] = c.values[i];
    Json backends = Json::object();
    for (const auto& [name, verdict] : c.explanation.backends) backends[name] = verdict.available;
    auto fused = c.explanation.backends.find("fused_attention");
    list.push_back(Json{{"workload", c.explanation.workload.name},
                        {"values", values},
                        {"selected", c.explanation.selected ? Json(*c.explanation.selected) : Json(nullptr)},
                        {"sub_backend", fused != c.explanation.backends.end() && fused->second.sub_backend
                                            ? Json(*fused->second.sub_backend) : Json(nullptr)},
                        {"available", backends}});
  }
  std::string te = cells.empty() ? "" : cells[0].explanation.te_version;
  return util::json_text(Json{{"schema_version", 1}, {"te_version", te}, {"sweep", Json{{"keys", keys}, {"cells", list}}}}, 2) + "\n";
}

// `explain --fix`: the verified fixes of every finding, best first. Text: one tab-separated line
// per fix (workload, finding, rank, what the workload then gets, command or "-", changes as
// key=value;...); JSON: {"schema_version": 1, "fixes": [...]}.
std::string render_fix_list(const std::vector<model::Explanation>& explanations, Format format) {
  using Json = nlohmann::ordered_json;
  Json list = Json::array();
  std::string text;
  for (const auto& e : explanations) {
    for (const auto& f : e.findings) {
      int rank = 0;
      for (const auto& fix : f.fixes) {
        if (!fix.verified) continue;
        ++rank;
        std::vector<std::string> changes;
        Json changes_json = Json::object();
        for (const auto& [name, value] : fix.changes) {
          changes.push_back(name + "=" + value);
          changes_json[name] = value;
        }
        std::string outcome = fix.verified->backend + (fix.verified->sub_backend.empty() ? "" : "/" + fix.verified->sub_backend);
        text += e.workload.name + "\t" + f.id + "\t" + std::to_string(rank) + "\t" + (outcome.empty() ? "-" : outcome) + "\t" +
                (fix.command.empty() ? "-" : fix.command) + "\t" + util::join(changes, ";") + "\n";
        list.push_back(Json{{"workload", e.workload.name},
                            {"finding", f.id},
                            {"rank", rank},
                            {"kind", fix.kind},
                            {"command", fix.command},
                            {"description", fix.description},
                            {"changes", changes_json},
                            {"backend", fix.verified->backend.empty() ? Json(nullptr) : Json(fix.verified->backend)},
                            {"sub_backend", fix.verified->sub_backend.empty() ? Json(nullptr) : Json(fix.verified->sub_backend)}});
      }
    }
  }
  if (format == Format::json) return util::json_text(Json{{"schema_version", 1}, {"fixes", list}}, 2) + "\n";
  return text;
}

} // namespace

int run_explain(const Options& options) {
  if (options.workload_files.empty() && options.hf_configs.empty() && options.megatron_args.empty() && options.te_logs.empty() && options.workload_sets.empty() &&
      options.sweeps.empty())
    throw util::Fatal{"explain needs a workload: --workload FILE, --hf-config FILE, --megatron-args FILE, --te-log FILE or --workload-set KEY=VALUE"};
  model::Facts facts = load_facts(options);
  rules::RuleSet rules = load_rules(options);
  report::TextOptions text{options.color ? report::Color::yes : report::Color::no, options.verbosity > 0};

  if (!options.sweeps.empty()) {
    auto sweeps = parse_sweeps(options.sweeps);
    std::vector<Cell> cells;
    std::vector<std::size_t> index(sweeps.size(), 0);
    std::size_t total = 1;
    for (const auto& s : sweeps) total *= s.values.size();
    if (total > 100000) throw util::Fatal{"--sweep: " + std::to_string(total) + " cells is too many (at most 100000)"};
    // A model with several attention variants gives one matrix per variant.
    std::vector<std::string> names;
    std::map<std::string, std::vector<Cell>> by_workload;
    for (std::size_t n = 0; n < total; ++n) {
      std::vector<std::string> settings, values;
      for (std::size_t i = 0; i < sweeps.size(); ++i) {
        settings.push_back(sweeps[i].key + "=" + sweeps[i].values[index[i]]);
        values.push_back(sweeps[i].values[index[i]]);
      }
      std::vector<std::shared_ptr<const model::ObservedSelection>> observed;
      auto workloads = load_workloads(options, settings, &observed);
      for (std::size_t i = 0; i < workloads.size(); ++i) {
        const model::Workload& w = workloads[i];
        if (!by_workload.count(w.name)) names.push_back(w.name);
        model::Facts scratch;
        Cell cell{values, rules::explain(rules, facts_for(facts, observed[i].get(), scratch), w)};
        cells.push_back(cell);
        by_workload[w.name].push_back(std::move(cell));
      }
      for (std::size_t i = sweeps.size(); i-- > 0;) {
        if (++index[i] < sweeps[i].values.size()) break;
        index[i] = 0;
      }
    }
    if (options.format == Format::json) {
      write_output(options, render_sweep_json(sweeps, cells));
      return 0;
    }
    std::string matrices;
    for (const auto& name : names) matrices += (matrices.empty() ? "" : "\n") + render_sweep_text(sweeps, by_workload[name], name);
    write_output(options, matrices);
    return 0;
  }

  std::vector<model::Explanation> explanations;
  rules::SearchOptions search = fix_search_options();
  model::Facts scratch;
  std::vector<std::shared_ptr<const model::ObservedSelection>> observed; // what a TE log says of each
  auto workloads = load_workloads(options, {}, &observed);
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const model::Workload& w = workloads[i];
    const model::Facts& workload_facts = facts_for(facts, observed[i].get(), scratch); // a TE log's versions
    explanations.push_back(rules::explain(rules, workload_facts, w));
    rules::verify_explanation(rules, workload_facts, explanations.back(), search);
  }
  int code = 0;
  for (const auto& e : explanations) {
    if (!e.selected) code = 2;
    for (const auto& f : e.findings) {
      if (f.severity == model::Severity::error) code = 2;
      if (f.severity == model::Severity::warning && code == 0) code = 1;
    }
  }
  if (options.fixes_only) {
    write_output(options, render_fix_list(explanations, options.format));
  } else if (options.format == Format::json) {
    write_output(options, report::render_explain_json(explanations));
  } else {
    std::string out;
    for (std::size_t i = 0; i < explanations.size(); ++i) {
      if (i) out += "\n";
      out += report::render_explain_text(explanations[i], text);
      if (observed[i]) out += report::render_te_log_text(explanations[i], *observed[i], text);
    }
    write_output(options, out);
  }
  return code;
}

} // namespace app
