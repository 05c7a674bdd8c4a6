// `explain --sweep`: the support matrix (which backend TE selects at each swept value) as text
// and JSON (render.hpp).
#include "report/render.hpp"

#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace report {

namespace {

using Json = nlohmann::ordered_json; // as report/json_model.hpp's (the same alias)

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

} // namespace

std::string render_sweep_text(const std::vector<SweepAxis>& sweeps, const std::vector<SweepCell>& cells, const std::string& workload) {
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

std::string render_sweep_json(const std::vector<SweepAxis>& sweeps, const std::vector<SweepCell>& cells) {
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

} // namespace report
