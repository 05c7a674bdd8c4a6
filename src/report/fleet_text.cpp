// `fleet` as text for an operator's terminal: at most 60 lines whatever the fleet's size. Every
// section shows its largest entries (caps below) and says how many it left out; host lists are
// Slurm host lists cut after --hosts items, where a run of consecutive hosts (gpu[0001-0400])
// is one item. --all lifts the caps; --format json has everything.
//
// Worst case by default: 1 summary line + configurations (blank, title, column header, 8 rows,
// "more") 12 + findings (blank, title, 8 x 2, "more") 19 + workloads (blank, title, 3 x (name +
// 4 backends), "more") 18 + stale (blank, title, 2, "more") 5 + unreadable 5 = 60.
//
// With `--by` the text is the admin's view instead: the summary line, then the workload x
// configuration matrix (blank, title, legend, header, 20 rows, "more") 25, then its fixes
// (blank, title, 16, "more") 19: 45 lines at most.
#include "report/render.hpp"

#include "util/hostlist.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace report {

namespace {

constexpr std::size_t k_max_configurations = 8;
constexpr std::size_t k_max_findings = 8;
constexpr std::size_t k_max_workloads = 3;
constexpr std::size_t k_max_backends = 4;
constexpr std::size_t k_max_stale = 2;
constexpr std::size_t k_max_unreadable = 2;
constexpr std::size_t k_max_matrix_rows = 20;
constexpr std::size_t k_max_matrix_workloads = 6;
constexpr std::size_t k_max_matrix_fixes = 16;

// "NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3": the vendor says nothing in a column of NVIDIA GPUs.
std::string short_gpu(std::string_view name) {
  std::string out(name);
  for (std::size_t at; (at = out.find("NVIDIA ")) != std::string::npos;) out.erase(at, 7);
  return out;
}

// Text from other nodes' files, safe to print: one line, no terminal control sequences.
std::string safe(std::string_view text) { return util::terminal_safe(util::one_line(text)); }

std::string plural(std::size_t n, std::string_view word) { return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s"); }

// Columns count characters, not bytes: continuation bytes of UTF-8 take no column.
std::size_t columns(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad_right(std::string text, std::size_t width) {
  std::size_t used = columns(text);
  if (used < width) text.append(width - used, ' ');
  return text;
}

// The host list, cut after max_items ranges (0: all): "gpu[0001-0004,0007],… +12 more".
std::string hosts_text(const std::vector<std::string>& hosts, std::size_t max_items) {
  auto ranges = util::host_ranges(hosts);
  if (max_items == 0 || ranges.size() <= max_items) return safe(util::format_hostlist(ranges));
  std::size_t shown = 0;
  for (std::size_t i = 0; i < max_items; ++i) shown += ranges[i].size();
  ranges.resize(max_items);
  return safe(util::format_hostlist(ranges)) + ",… +" + std::to_string(hosts.size() - shown) + " more";
}

// "  … 12 more findings (--all, or --format json)" when a section was cut.
std::string more_line(std::size_t total, std::size_t shown, std::string_view what) {
  if (total <= shown) return {};
  return "  … " + std::to_string(total - shown) + " more " + std::string(what) + " (--all shows them; --format json has everything)\n";
}

std::string configurations_text(const model::FleetSummary& s, const FleetTextOptions& options) {
  if (s.configurations.empty()) return {};
  std::size_t shown = options.all ? s.configurations.size() : std::min(s.configurations.size(), k_max_configurations);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"nodes", "worst", "GPU", "driver", "CUDA", "cuDNN", "NCCL", "torch", "TE", "hosts"});
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& c = s.configurations[i];
    std::vector<std::string> row{std::to_string(c.nodes.size()), safe(c.worst_status.empty() ? "?" : c.worst_status),
                                 c.gpu ? safe(short_gpu(*c.gpu)) : "-"};
    for (const auto& v : c.versions) row.push_back(v ? safe(*v) : "-");
    row.push_back(hosts_text(c.nodes, options.hosts));
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out = "\nConfigurations (GPU, driver, CUDA, cuDNN, NCCL, torch, TE): " + std::to_string(s.configurations.size()) + "\n";
  for (const auto& row : rows) {
    std::string line = "  ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      // The node count is right-aligned, the last column is not padded.
      if (i == 0) line += std::string(widths[0] - row[0].size(), ' ') + row[0];
      else if (i + 1 == row.size()) line += row[i];
      else line += pad_right(row[i], widths[i]);
      if (i + 1 < row.size()) line += "  ";
    }
    out += line + "\n";
  }
  return out + more_line(s.configurations.size(), shown, "configurations");
}

std::string findings_text(const model::FleetSummary& s, const FleetTextOptions& options) {
  if (s.findings.empty()) return {};
  std::size_t shown = options.all ? s.findings.size() : std::min(s.findings.size(), k_max_findings);
  std::string out = "\nFindings: " + std::to_string(s.findings.size()) + "\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& f = s.findings[i];
    out += "  " + pad_right(safe(f.severity), 7) + "  " + safe(f.id) + "  on " + plural(f.nodes.size(), "node") + ": " +
           hosts_text(f.nodes, options.hosts) + "\n";
    if (!f.title.empty()) out += "           " + safe(f.title) + "\n";
  }
  return out + more_line(s.findings.size(), shown, "findings");
}

std::string workloads_text(const model::FleetSummary& s, const FleetTextOptions& options) {
  if (s.workloads.empty()) return {};
  std::size_t shown = options.all ? s.workloads.size() : std::min(s.workloads.size(), k_max_workloads);
  std::string out = "\nWorkloads: " + std::to_string(s.workloads.size()) + "\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& w = s.workloads[i];
    out += "  " + safe(w.name) + "\n";
    // The backends by node count; the nodes where the job does not run (no backend, fails,
    // unknown) first of all.
    std::vector<std::pair<std::string, const std::vector<std::string>*>> backends;
    for (const auto& [backend, nodes] : w.by_backend) backends.emplace_back(backend, &nodes);
    std::stable_sort(backends.begin(), backends.end(), [](const auto& a, const auto& b) {
      if (model::fleet_label_runs(a.first) != model::fleet_label_runs(b.first)) return !model::fleet_label_runs(a.first);
      return a.second->size() > b.second->size();
    });
    std::size_t width = 0;
    for (const auto& [backend, _] : backends) width = std::max(width, backend == "none" ? std::size_t{10} : safe(backend).size());
    std::size_t lines = options.all || backends.size() <= k_max_backends ? backends.size() : k_max_backends - 1;
    for (std::size_t b = 0; b < lines; ++b) {
      const auto& [backend, nodes] = backends[b];
      out += "    " + pad_right(backend == "none" ? "no backend" : safe(backend), width) + "  " + plural(nodes->size(), "node") + ": " +
             hosts_text(*nodes, options.hosts) + "\n";
    }
    if (lines < backends.size()) out += "    … " + std::to_string(backends.size() - lines) + " more backends\n";
  }
  return out + more_line(s.workloads.size(), shown, "workloads");
}

// Aligned columns: the first `right` columns right-aligned, the last one not padded.
std::string table_text(const std::vector<std::vector<std::string>>& rows, std::size_t right) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], columns(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = "  ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i < right) line += std::string(widths[i] - columns(row[i]), ' ') + row[i];
      else if (i + 1 == row.size()) line += row[i];
      else line += pad_right(row[i], widths[i]);
      if (i + 1 < row.size()) line += "  ";
    }
    out += line + "\n";
  }
  return out;
}

std::string key_value_text(const std::string& key, const std::optional<std::string>& value) {
  if (!value) return "-";
  return safe(key == "gpu" ? short_gpu(*value) : *value);
}

// The admin's view: one row per configuration (the --by keys), one column per workload; a cell
// is the worst verdict on those nodes ("fails 3/400" when not all of them) and the number of its
// fix in the list below.
std::string matrix_text(const model::FleetMatrix& m, const FleetTextOptions& options) {
  static const std::map<std::string, std::string> k_titles = {{"gpu", "GPU"},   {"driver", "driver"}, {"cuda", "CUDA"}, {"cudnn", "cuDNN"},
                                                              {"nccl", "NCCL"}, {"torch", "torch"},   {"te", "TE"}};
  std::vector<std::string> titles;
  for (const auto& key : m.by) titles.push_back(k_titles.at(key));
  std::size_t rows_shown = options.all ? m.groups.size() : std::min(m.groups.size(), k_max_matrix_rows);
  std::size_t columns_shown = options.all ? m.workloads.size() : std::min(m.workloads.size(), k_max_matrix_workloads);
  std::string out = "\nWorkloads by " + util::join(titles, ", ") + ": " + plural(m.workloads.size(), "workload") + " on " +
                    plural(m.groups.size(), "configuration") + "\n";
  out += "  (a cell: the worst verdict there, with its nodes when not all; [n]: its fix below)\n";
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"nodes"};
  header.insert(header.end(), titles.begin(), titles.end());
  for (std::size_t w = 0; w < columns_shown; ++w) header.push_back(safe(m.workloads[w]));
  rows.push_back(std::move(header));
  std::vector<std::string> fixes; // numbered from 1, in order of first use
  std::vector<std::string> fix_where;
  for (std::size_t g = 0; g < rows_shown; ++g) {
    const auto& group = m.groups[g];
    std::vector<std::string> row{std::to_string(group.nodes.size())};
    for (std::size_t k = 0; k < m.by.size(); ++k) row.push_back(key_value_text(m.by[k], group.key[k]));
    for (std::size_t w = 0; w < columns_shown; ++w) {
      const auto& cell = m.cells[w][g];
      if (cell.worst.empty()) {
        row.push_back("-");
        continue;
      }
      std::size_t worst_nodes = cell.by_verdict.at(cell.worst).size();
      std::string text = cell.worst;
      if (worst_nodes != group.nodes.size()) text += " " + std::to_string(worst_nodes) + "/" + std::to_string(group.nodes.size());
      if (!cell.fix.empty() && cell.worst != "runs") {
        auto it = std::find(fixes.begin(), fixes.end(), cell.fix);
        if (it == fixes.end()) {
          fixes.push_back(cell.fix);
          fix_where.push_back(cell.fix_finding);
          it = fixes.end() - 1;
        }
        text += " [" + std::to_string(it - fixes.begin() + 1) + "]";
      }
      row.push_back(std::move(text));
    }
    rows.push_back(std::move(row));
  }
  out += table_text(rows, 1);
  if (rows_shown < m.groups.size()) out += more_line(m.groups.size(), rows_shown, "configurations");
  if (columns_shown < m.workloads.size())
    out +=
        "  … " + std::to_string(m.workloads.size() - columns_shown) + " more workloads (--all shows them; --format json has everything)\n";
  if (fixes.empty()) return out;
  std::size_t fixes_shown = options.all ? fixes.size() : std::min(fixes.size(), k_max_matrix_fixes);
  out += "\nFixes:\n";
  for (std::size_t i = 0; i < fixes_shown; ++i) {
    out += "  [" + std::to_string(i + 1) + "] " + safe(fixes[i]) + (fix_where[i].empty() ? "" : "  (" + safe(fix_where[i]) + ")") + "\n";
  }
  return out + more_line(fixes.size(), fixes_shown, "fixes");
}

std::string stale_text(const model::FleetSummary& s, const FleetTextOptions& options) {
  std::vector<const model::FleetNode*> stale;
  for (const auto& n : s.nodes) {
    if (n.stale) stale.push_back(&n);
  }
  if (stale.empty()) return {};
  std::stable_sort(stale.begin(), stale.end(), [](const auto* a, const auto* b) { return a->age_seconds > b->age_seconds; });
  std::size_t shown = options.all ? stale.size() : std::min(stale.size(), k_max_stale);
  std::string out =
      "\nStale reports (older than " + human_duration(s.max_age_seconds) + "): " + plural(stale.size(), "node") + ", oldest first\n";
  for (std::size_t i = 0; i < shown; ++i) {
    out += "  " + safe(stale[i]->host) + "  generated " + safe(stale[i]->generated_at) + " (" + human_age(stale[i]->age_seconds) + ")\n";
  }
  return out + more_line(stale.size(), shown, "stale nodes");
}

std::string unreadable_text(const model::FleetSummary& s, const FleetTextOptions& options) {
  if (s.unreadable.empty()) return {};
  std::size_t shown = options.all ? s.unreadable.size() : std::min(s.unreadable.size(), k_max_unreadable);
  std::string out = "\nUnreadable: " + std::to_string(s.unreadable.size()) + "\n";
  for (std::size_t i = 0; i < shown; ++i) out += "  " + safe(s.unreadable[i]) + "\n";
  return out + more_line(s.unreadable.size(), shown, "unreadable files");
}

} // namespace

std::string human_duration(double seconds) {
  double s = std::fabs(seconds);
  auto whole = [](double v) { return std::to_string(static_cast<long long>(std::floor(v))); };
  if (s < 120) return whole(s) + " s";
  if (s < 120 * 60) return whole(s / 60) + " min";
  if (s < 48 * 3600) return whole(s / 3600) + " h";
  return whole(s / 86400) + " d";
}

std::string human_age(double age_seconds) {
  if (age_seconds < 0) return human_duration(age_seconds) + " in the future";
  return human_duration(age_seconds) + " ago";
}

std::string render_fleet_text(const model::FleetSummary& s, const FleetTextOptions& options) {
  std::map<int, std::pair<std::string, std::size_t>> by_status; // rank -> status, count
  std::size_t stale = 0;
  double newest = 0, oldest = 0;
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    const auto& n = s.nodes[i];
    auto& entry = by_status[model::status_rank(n.status)];
    if (entry.first.empty()) entry.first = n.status.empty() ? "no status" : safe(n.status);
    ++entry.second;
    if (n.stale) ++stale;
    newest = i == 0 ? n.age_seconds : std::min(newest, n.age_seconds);
    oldest = i == 0 ? n.age_seconds : std::max(oldest, n.age_seconds);
  }
  std::string out = "Nodes: " + std::to_string(s.nodes.size());
  std::vector<std::string> parts;
  for (const auto& [_, entry] : by_status) parts.push_back(std::to_string(entry.second) + " " + entry.first);
  if (!parts.empty()) out += " (" + util::join(parts, ", ") + ")";
  if (stale) out += ", " + std::to_string(stale) + " stale";
  if (!s.unreadable.empty()) out += ", " + std::to_string(s.unreadable.size()) + " unreadable";
  if (!s.nodes.empty()) {
    out += newest == oldest ? "; report " + human_age(newest) : "; newest report " + human_age(newest) + ", oldest " + human_age(oldest);
  }
  out += "\n";
  if (s.matrix) return out + matrix_text(*s.matrix, options);
  return out + configurations_text(s, options) + findings_text(s, options) + workloads_text(s, options) + stale_text(s, options) +
         unreadable_text(s, options);
}

} // namespace report
