// `probe` as text, readable at a glance: GPUs one line each, each library with the copy that
// would be loaded, every copy found (version, path, where it was found, how its version was
// read) and the copy torch and TE each load with the reason; then the remaining facts by area.
// -v prints every fact by name instead, as the JSON snapshot has them.
#include "report/render.hpp"
#include "report/style.hpp"

#include "util/strings.hpp"

#include <map>

namespace report {

namespace {

struct Section {
  std::string_view prefix;
  std::string_view title;
};

constexpr Section k_library_sections[] = {
    {"cudnn", "cuDNN"},   {"nccl", "NCCL"},         {"nvrtc", "NVRTC"},     {"cudart", "CUDA runtime (cudart)"},
    {"cublas", "cuBLAS"}, {"cublaslt", "cuBLASLt"}, {"libcuda", "libcuda"},
};

constexpr Section k_other_sections[] = {
    {"driver", "Driver"},      {"cuda", "CUDA"},          {"python", "Python"},        {"torch", "PyTorch"},
    {"te", "TransformerEngine"}, {"flash_attn", "flash-attn"}, {"flash_attn_3", "flash-attn 3"}, {"flash_attn_4", "flash-attn 4"},
    {"megatron_core", "Megatron-Core"}, {"package", "Python packages"}, {"env", "Environment"}, {"system", "System"},
};

std::string_view top_segment(std::string_view name) { return name.substr(0, name.find_first_of(".[")); }

std::string get(const model::Facts& facts, const std::string& name, std::string_view fallback = "") {
  auto v = facts.get_string(name);
  return util::one_line(v ? *v : std::string(fallback));
}

std::string padded(std::string s, std::size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

void render_gpus(std::string& out, const model::Facts& facts, const Style& style) {
  out += style.bold("GPUs") + "\n";
  std::size_t n = facts.count("gpu");
  if (n == 0) out += "  none found\n";
  for (std::size_t i = 0; i < n; ++i) {
    std::string base = "gpu[" + std::to_string(i) + "]";
    std::string line = "  " + std::to_string(i) + "  " + get(facts, base + ".name", "unknown GPU");
    if (facts.has(base + ".sm"))
      line += "  sm" + get(facts, base + ".sm") + " (" + get(facts, base + ".compute_capability") + ", " + get(facts, base + ".architecture", "?") + ")";
    if (facts.has(base + ".memory_mib")) line += "  " + get(facts, base + ".memory_mib") + " MiB";
    if (facts.has(base + ".pci_bus_id")) line += "  " + get(facts, base + ".pci_bus_id");
    if (facts.has(base + ".pci_device_id")) line += "  " + get(facts, base + ".pci_device_id");
    if (facts.get_bool(base + ".mig_enabled").value_or(false)) line += "  MIG on";
    line += style.dim("  [" + get(facts, base + ".source", "?") + "]");
    out += line + "\n";
  }
  out += "\n";
}

void render_library(std::string& out, const model::Facts& facts, const Style& style, const Section& section) {
  std::string key(section.prefix);
  std::size_t copies = facts.count(key + ".copies");
  out += style.bold(std::string(section.title));
  if (facts.has(key + ".version")) {
    out += "  " + get(facts, key + ".version") + "  " + get(facts, key + ".path");
    if (key == "cudnn" && facts.has("cudnn.loaded_by")) out += style.dim("  (the copy " + get(facts, "cudnn.loaded_by") + " loads)");
  } else {
    out += copies ? "" : "  not found";
  }
  out += "\n";
  if (copies > 0) {
    std::size_t width = 0;
    for (std::size_t i = 0; i < copies; ++i) width = std::max(width, get(facts, key + ".copies[" + std::to_string(i) + "].path").size());
    out += "  " + std::to_string(copies) + (copies == 1 ? " copy" : " copies") +
           (facts.get_bool(key + ".copies_disagree").value_or(false) ? ", with different versions" : "") + ":\n";
    for (std::size_t i = 0; i < copies; ++i) {
      std::string base = key + ".copies[" + std::to_string(i) + "]";
      out += "    " + padded(get(facts, base + ".version", "?"), 12) + padded(get(facts, base + ".path"), width + 2) +
             style.dim(get(facts, base + ".source") + ", version from " + get(facts, base + ".version_source", "?")) + "\n";
    }
  }
  for (std::string_view consumer : {"torch", "te"}) {
    std::string base = std::string(consumer) + "." + key;
    if (!facts.has(base + ".path")) continue;
    out += "  " + padded(consumer == "te" ? "TE loads" : "torch loads", 13) + get(facts, base + ".version", "?") + "  " +
           get(facts, base + ".path") + "\n";
    if (facts.has(base + ".reason")) out += "  " + std::string(13, ' ') + style.dim(wrap_text(get(facts, base + ".reason"), 15)) + "\n";
  }
  // What a process that imports both maps, per import order (probe/import_order.hpp).
  if (facts.has(key + ".mapped_copies.torch_first")) {
    std::string line = "torch first: " + get(facts, key + ".mapped_copies.torch_first") + " mapped";
    if (facts.has("te." + key + ".torch_first.version")) line += ", TE on " + get(facts, "te." + key + ".torch_first.version");
    if (facts.has("torch." + key + ".te_first.version")) {
      line += "; TE first: " + get(facts, key + ".mapped_copies.te_first", "?") + " mapped, torch on " +
              get(facts, "torch." + key + ".te_first.version");
      if (facts.get_bool("torch." + key + ".te_first.fails").value_or(false)) line += ", which torch's cuDNN check rejects";
    }
    out += "  " + padded("import order", 13) + wrap_text(line, 15) + "\n";
  }
  out += "\n";
}

void render_rows(std::string& out, const Style& style, std::string_view title,
                 const std::vector<std::pair<std::string, std::string>>& rows) {
  out += style.bold(std::string(title)) + "\n";
  std::size_t width = 0;
  for (const auto& [name, value] : rows) width = std::max(width, name.size());
  width = std::min<std::size_t>(width, 44);
  for (const auto& [name, value] : rows) out += "  " + style.dim(padded(name, width)) + "  " + util::one_line(value) + "\n";
  out += "\n";
}

} // namespace

std::string render_probe_text(const model::Facts& facts, const TextOptions& options) {
  Style style(options.color);
  std::map<std::string_view, std::vector<std::pair<std::string, std::string>>> by_section;
  for (const auto& [name, value] : facts.entries()) by_section[top_segment(name)].emplace_back(name, value.to_string());
  std::string out;

  if (!options.verbose) {
    render_gpus(out, facts, style);
    by_section.erase("gpu");
  }
  for (const auto& section : k_other_sections) {
    if (section.prefix == "python") {
      // Libraries next to the Python section: which interpreter's packages decide what loads.
      if (!options.verbose) {
        for (const auto& library : k_library_sections) render_library(out, facts, style, library);
        for (const auto& library : k_library_sections) by_section.erase(library.prefix);
      }
    }
    auto it = by_section.find(section.prefix);
    if (it == by_section.end()) continue;
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& row : it->second) {
      // Consumer choices are shown with their library above.
      if (!options.verbose && (section.prefix == "torch" || section.prefix == "te") &&
          (row.first.find(".cudnn.") != std::string::npos || row.first.find(".nccl.") != std::string::npos ||
           row.first.find(".nvrtc.") != std::string::npos || row.first.find(".cudart.") != std::string::npos ||
           row.first.find(".cublas.") != std::string::npos || row.first.find(".cublaslt.") != std::string::npos))
        continue;
      rows.push_back(row);
    }
    if (!rows.empty()) render_rows(out, style, section.title, rows);
    by_section.erase(it);
  }
  // Probe outcomes: only the ones that did not succeed, unless -v.
  if (auto it = by_section.find("probe"); it != by_section.end()) {
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& row : it->second) {
      if (!options.verbose && (row.first.ends_with(".seconds") || (row.first.ends_with(".status") && row.second == "ok"))) continue;
      rows.push_back(row);
    }
    if (!rows.empty()) render_rows(out, style, "Probes", rows);
    by_section.erase(it);
  }
  for (const auto& [prefix, rows] : by_section) render_rows(out, style, prefix, rows);
  // Every value came from the node, a rules file or a workload: no terminal control gets through.
  return util::terminal_safe(out, options.color == Color::yes ? util::Sgr::keep : util::Sgr::show);
}

} // namespace report
