// The cache's form of a summary: each version need as three strings, file, version and "1" for
// a weak one ("0" otherwise). The entry's identity is the summary's, so it needs no copy of it.
#include "probe/elf_link_summary.hpp"

#include "probe/elf_reader.hpp"

namespace probe {

namespace {

constexpr std::string_view k_summary_kind = "elf_link_summary";

std::optional<std::vector<ElfLinkSummary::VersionNeed>> decode_summary(std::string_view text) {
  auto parts = util::unpack_strings(text);
  if (!parts || parts->size() % 3 != 0) return std::nullopt;
  std::vector<ElfLinkSummary::VersionNeed> needs;
  for (std::size_t at = 0; at < parts->size(); at += 3) {
    const std::string& weak = (*parts)[at + 2];
    if (weak != "0" && weak != "1") return std::nullopt;
    needs.push_back({std::move((*parts)[at]), std::move((*parts)[at + 1]), weak == "1"});
  }
  return needs;
}

std::string encode_summary(const std::vector<ElfLinkSummary::VersionNeed>& needs) {
  std::vector<std::string> parts;
  parts.reserve(needs.size() * 3);
  for (const auto& need : needs) parts.insert(parts.end(), {need.file, need.version, need.weak ? "1" : "0"});
  return util::pack_strings(parts);
}

} // namespace

std::optional<ElfLinkSummary> cached_elf_link_summary(const NodeFile& file) {
  util::FileCache* cache = node_file_cache();
  if (!cache) return std::nullopt;
  auto id = elf_dynamic_identity(file);
  if (!id) return std::nullopt;
  auto text = cache->find(k_summary_kind, file.host().string(), *id);
  if (!text) return std::nullopt;
  auto needs = decode_summary(*text);
  if (!needs) return std::nullopt;
  return ElfLinkSummary{*id, std::move(*needs)};
}

ElfLinkSummary elf_link_summary(const NodeFile& file, const ElfSymbols& symbols) {
  ElfLinkSummary summary{symbols.identity(), {}};
  for (const auto& need : symbols.version_needs())
    summary.version_needs.push_back({std::string(need.file), std::string(need.version), need.weak});
  if (util::FileCache* cache = node_file_cache())
    cache->put(k_summary_kind, file.host().string(), summary.identity, encode_summary(summary.version_needs));
  return summary;
}

} // namespace probe
