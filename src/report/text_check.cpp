// The doctor-style text report: one line per area with what was found and the worst finding's
// mark, then each finding with its cause, the evidence, the fix to type and the references.
#include "report/render.hpp"
#include "report/style.hpp"

#include "util/strings.hpp"

#include <map>

namespace report {

namespace {

struct Area {
  std::string_view key;   // Finding::area
  std::string_view label; // left column
};

constexpr Area k_areas[] = {
    {"gpu", "GPU"},
    {"driver", "Driver"},
    {"cuda", "CUDA"},
    {"cudnn", "cuDNN"},
    {"nccl", "NCCL"},
    {"nvrtc", "NVRTC"},
    {"cublas", "cuBLAS"},
    {"python", "Python"},
    {"torch", "PyTorch"},
    {"te", "TE"},
    {"env", "Environment"},
    {"attention", "Attention"},
    {"selftest", "Self-test"},
    {"knowledge", "Knowledge"}, // only when a fact lies beyond the rules (its finding's title)
};

std::string fact_line(const model::Facts& facts, std::string_view name, std::string_view fallback = "") {
  auto v = facts.get_string(name);
  return util::one_line(v ? *v : std::string(fallback));
}

std::string library_line(const model::Facts& facts, std::string_view lib) {
  std::string name(lib);
  auto version = facts.get_string(name + ".version");
  if (!version) return "not found";
  std::string line = *version;
  if (auto path = facts.get_string(name + ".path")) line += " (" + *path + ")";
  auto copies = facts.get_int(name + ".copy_count").value_or(0);
  if (copies > 1) {
    line += ", " + std::to_string(copies) + " copies";
    if (facts.get_bool(name + ".copies_disagree").value_or(false)) line += " with different versions";
  }
  return line;
}

// ", requires pydantic (not installed), einops>=0.8 (0.6.1 installed)" for a package's unmet
// Requires-Dist, or "".
std::string unmet_requirements(const model::Facts& facts, const std::string& package) {
  std::vector<std::string> missing;
  for (std::size_t i = 0, n = facts.count(package + ".requirements.missing"); i < n; ++i) {
    std::string base = package + ".requirements.missing[" + std::to_string(i) + "]";
    auto found = facts.get_string(base + ".found_version");
    missing.push_back(fact_line(facts, base + ".requirement") +
                      (found ? " (" + util::one_line(*found) + " installed)" : " (not installed)"));
  }
  return missing.empty() ? std::string() : ", requires " + util::join(missing, ", ");
}

std::string area_summary(const model::Facts& facts, std::string_view area) {
  if (area == "gpu") {
    auto count = facts.get_int("gpu.count").value_or(0);
    if (count == 0) return "no NVIDIA GPU found";
    std::map<std::string, int> kinds;
    for (long i = 0; i < count; ++i) {
      std::string base = "gpu[" + std::to_string(i) + "]";
      std::string label = fact_line(facts, base + ".name", "unknown GPU");
      if (auto sm = facts.get_int(base + ".sm")) label += " (sm" + std::to_string(*sm) + ")";
      ++kinds[label];
    }
    std::vector<std::string> parts;
    for (auto& [label, n] : kinds) parts.push_back(std::to_string(n) + " × " + label);
    return util::join(parts, ", ");
  }
  if (area == "driver") {
    auto version = facts.get_string("driver.version");
    if (!version) return "not found" + (facts.has("probe.nvml.reason") ? " (" + fact_line(facts, "probe.nvml.reason") + ")" : "");
    std::string line = *version;
    if (auto cuda = facts.get_string("driver.cuda_version")) line += ", supports CUDA " + *cuda;
    return line;
  }
  if (area == "cuda") {
    std::string line;
    if (auto runtime = facts.get_string("cuda.runtime_version")) line = "runtime " + *runtime;
    if (auto toolkit = facts.get_string("cuda.toolkit_version")) {
      line += (line.empty() ? "" : ", ") + std::string("toolkit ") + *toolkit;
      if (auto path = facts.get_string("cuda.toolkit_path")) line += " (" + *path + ")";
    }
    return line.empty() ? "no CUDA runtime found" : line;
  }
  if (area == "cudnn" || area == "nccl" || area == "nvrtc") return library_line(facts, area);
  // cuBLAS: TE's and torch's GEMMs run on cuBLASLt. A node where the probe found neither (a
  // snapshot from before cuBLAS was probed) gets no line unless a finding is about it.
  if (area == "cublas") {
    if (facts.has("cublaslt.version")) return "cuBLASLt " + library_line(facts, "cublaslt");
    return facts.has("cublas.version") ? library_line(facts, "cublas") : std::string();
  }
  if (area == "python") {
    auto exe = facts.get_string("python.executable");
    if (!exe) return "no interpreter found";
    return *exe + (facts.has("python.version") ? " (" + fact_line(facts, "python.version") + ")" : "");
  }
  if (area == "torch") {
    auto v = facts.get_string("torch.version");
    return v ? *v + (facts.has("torch.cuda_version") ? ", built for CUDA " + fact_line(facts, "torch.cuda_version") : "") +
                   unmet_requirements(facts, "torch")
             : "not installed";
  }
  if (area == "te") {
    auto v = facts.get_string("te.version");
    if (!v) {
      auto assumed = facts.get_string("doctor.assumed_te_version");
      return "not installed" +
             (assumed ? "; workload verdicts need a TE release (--set te.version=X; " + *assumed + " is the newest)" : std::string());
    }
    std::string line = *v + (facts.has("te.distribution") ? " (" + fact_line(facts, "te.distribution") + ")" : "");
    // What keeps it from importing is part of its line (the mark comes from the findings).
    line += unmet_requirements(facts, "te");
    if (facts.get_bool("te.torch_extension.present") == false) line += ", no PyTorch extension";
    return line;
  }
  if (area == "env") {
    int nvte = 0;
    for (const auto& [name, value] : facts.entries()) {
      if (name.starts_with("env.NVTE_")) ++nvte;
    }
    return std::to_string(nvte) + " NVTE_* variable" + (nvte == 1 ? "" : "s") + " set";
  }
  return {};
}

// Whether the area's thing is there at all: an absent GPU, library or package is no pass (its
// line gets `i`, or its finding's mark), never a ✓.
bool area_present(const model::Facts& facts, std::string_view area) {
  if (area == "gpu") return facts.get_int("gpu.count").value_or(0) > 0;
  if (area == "driver") return facts.has("driver.version");
  if (area == "cuda") return facts.has("cuda.runtime_version") || facts.has("cuda.toolkit_version");
  if (area == "cudnn" || area == "nccl" || area == "nvrtc") return facts.has(std::string(area) + ".version");
  if (area == "cublas") return facts.has("cublaslt.version") || facts.has("cublas.version");
  if (area == "python") return facts.has("python.executable");
  if (area == "torch") return facts.has("torch.version");
  if (area == "te") return facts.has("te.version");
  return true;
}

void render_finding(std::string& out, const model::Finding& f, const Style& style, bool verbose) {
  out += "  " + style.mark(f.severity) + " " + style.bold(f.title) + "  " + style.dim("[" + f.id + "]") + "\n";
  if (f.impact != model::Impact::none) out += "      " + style.red("impact: " + std::string(model::describe(f.impact))) + "\n";
  if (!f.workload.empty()) out += "      workload: " + util::one_line(f.workload) + "\n";
  out += "      " + wrap_text(f.message, 6) + "\n";
  if (!f.evidence.empty()) {
    std::vector<std::string> parts;
    for (const auto& [name, value] : f.evidence) parts.push_back(name + " = " + util::one_line(value));
    out += "      " + style.dim("evidence: " + wrap_text(util::join(parts, ", "), 16)) + "\n";
  }
  out += render_fixes(f.fixes, style, 6, verbose);
  for (const auto& reference : f.references) out += "      " + style.dim("see: " + reference) + "\n";
}

} // namespace

std::string render_check_text(const model::Report& report, const TextOptions& options) {
  Style style(options.color);
  std::string out;
  out += style.bold("nvte-doctor " + report.tool_version) + " on " + util::one_line(report.host) + "  " + style.dim(report.generated_at) +
         "\n";
  // A preflight says first what was checked against what: the verdicts are the image's.
  if (auto image = report.facts.get_string("preflight.image")) {
    out += "preflight of image " + util::one_line(*image) + " on node " +
           util::one_line(report.facts.get_string("preflight.node").value_or(report.host)) + "\n";
    out += style.dim("  node facts: " + util::one_line(report.facts.get_string("preflight.node_facts").value_or("?")) +
                     "; image environment: " + util::one_line(report.facts.get_string("preflight.image_env").value_or("?"))) +
           "\n";
  }
  out += "\n";
  // The answer first: one line per workload, its verdict and the one command to type.
  for (const auto& e : report.workloads) out += render_verdict_line(e, options);
  if (!report.workloads.empty()) out += "\n";

  std::map<std::string, model::Severity, std::less<>> worst;
  std::map<std::string, const model::Finding*, std::less<>> first_worst; // its title stands in for a summary
  std::map<std::string, int, std::less<>> counted;
  for (const auto& f : report.findings) {
    auto [it, inserted] = worst.try_emplace(f.area, f.severity);
    if (!inserted && f.severity > it->second) it->second = f.severity;
    auto& first = first_worst[f.area];
    if (!first || f.severity > first->severity) first = &f;
    ++counted[f.area];
  }
  for (const auto& area : k_areas) {
    std::string summary = area_summary(report.facts, area.key);
    auto w = worst.find(area.key);
    if (summary.empty() && w == worst.end()) continue;
    // Areas without facts of their own (attention, self-test) say what their findings say.
    if (summary.empty()) {
      int more = counted[std::string(area.key)] - 1;
      summary = first_worst[std::string(area.key)]->title + (more > 0 ? " (+" + std::to_string(more) + " more)" : "");
    }
    std::string mark = w == worst.end() || w->second == model::Severity::info ? style.mark_ok() : style.mark(w->second);
    // A doctor on a node without the thing has not passed its check: the line is a note, not a ✓
    // (no GPU, no driver, PyTorch or TE not installed).
    if (!area_present(report.facts, area.key) && (w == worst.end() || w->second == model::Severity::info))
      mark = style.mark(model::Severity::info);
    std::string label(area.label);
    label.resize(12, ' ');
    out += mark + " " + label + util::one_line(summary) + "\n";
  }
  if (!report.findings.empty()) {
    out += "\n" + style.bold("Findings") + "\n";
    for (model::Severity severity : {model::Severity::error, model::Severity::warning, model::Severity::info}) {
      for (const auto& f : report.findings) {
        if (f.severity != severity) continue;
        if (severity == model::Severity::info && !options.verbose) continue;
        render_finding(out, f, style, options.verbose);
        out += "\n";
      }
    }
    if (!options.verbose && report.summary.infos > 0) {
      out += style.dim("  (" + std::to_string(report.summary.infos) + " informational finding" +
                       (report.summary.infos == 1 ? "" : "s") + " hidden; -v shows them)") + "\n";
    }
  }
  auto plural = [](int n, std::string_view word) {
    return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
  };
  std::string status = report.summary.status;
  auto colored = [&](const std::string& text, const std::string& level) {
    return level == "OK" ? style.green(text) : level == "WARNING" ? style.yellow(text) : style.red(text);
  };
  out += "\nnode: " + plural(report.summary.errors, "error") + ", " + plural(report.summary.warnings, "warning") + ", " +
         plural(report.summary.infos, "note") + ": " + style.bold(colored(status, status)) + "\n";
  if (!report.workloads.empty()) {
    const auto& w = report.summary.workloads;
    std::vector<std::string> parts;
    for (auto [n, what] :
         {std::pair{w.runs, "run"}, {w.at_risk, "at risk"}, {w.fails, "fail"}, {w.no_backend, "no backend"}, {w.unknown, "unknown"}})
      if (n) parts.push_back(std::to_string(n) + " " + what);
    out += "workloads: " + util::join(parts, ", ") + ": " +
           style.bold(colored(report.summary.workload_status, report.summary.workload_status)) + "\n";
  }
  // Every value came from the node, a rules file or a workload: no terminal control gets through.
  return util::terminal_safe(out, options.color == Color::yes ? util::Sgr::keep : util::Sgr::show);
}

} // namespace report
