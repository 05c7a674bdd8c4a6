// `probe` as text: a section per area, each fact as "name  value", collections as indented
// blocks, probe failures last with their reasons. Meant to be read at a glance.
#include "report/render.hpp"
#include "report/style.hpp"

#include <map>

namespace report {

namespace {

struct Section {
  std::string_view prefix;
  std::string_view title;
};

constexpr Section k_sections[] = {
    {"gpu", "GPUs"},          {"driver", "Driver"},       {"cuda", "CUDA"},   {"cudnn", "cuDNN"},
    {"nccl", "NCCL"},         {"nvrtc", "NVRTC"},         {"cudart", "CUDA runtime library"},
    {"libcuda", "libcuda"},   {"python", "Python"},       {"torch", "PyTorch"}, {"te", "TransformerEngine"},
    {"flash_attn", "flash-attn"}, {"flash_attn_3", "flash-attn 3"}, {"megatron_core", "Megatron-Core"},
    {"package", "Python packages"}, {"env", "Environment"}, {"system", "System"}, {"probe", "Probes"},
};

std::string_view top_segment(std::string_view name) {
  auto end = name.find_first_of(".[");
  return name.substr(0, end);
}

} // namespace

std::string render_probe_text(const model::Facts& facts, const TextOptions& options) {
  Style style(options.color);
  std::map<std::string_view, std::vector<std::pair<std::string, std::string>>> by_section;
  for (const auto& [name, value] : facts.entries()) {
    by_section[top_segment(name)].emplace_back(name, value.to_string());
  }
  std::string out;
  auto emit = [&](std::string_view title, const std::vector<std::pair<std::string, std::string>>& rows) {
    out += style.bold(std::string(title)) + "\n";
    std::size_t width = 0;
    for (const auto& [name, value] : rows) width = std::max(width, name.size());
    width = std::min<std::size_t>(width, 44);
    for (const auto& [name, value] : rows) {
      std::string padded = name;
      if (padded.size() < width) padded.resize(width, ' ');
      out += "  " + style.dim(padded) + "  " + value + "\n";
    }
    out += "\n";
  };
  for (const auto& section : k_sections) {
    auto it = by_section.find(section.prefix);
    if (it == by_section.end()) continue;
    if (section.prefix == "probe" && !options.verbose) {
      std::vector<std::pair<std::string, std::string>> problems;
      for (const auto& row : it->second) {
        if (row.first.ends_with(".seconds")) continue;
        if (row.first.ends_with(".status") && row.second == "ok") continue;
        problems.push_back(row);
      }
      if (!problems.empty()) emit(section.title, problems);
    } else {
      emit(section.title, it->second);
    }
    by_section.erase(it);
  }
  for (const auto& [prefix, rows] : by_section) emit(prefix, rows);
  return out;
}

} // namespace report
