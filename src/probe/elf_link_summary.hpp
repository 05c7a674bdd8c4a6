// What the native probe's link check needs of an ELF object to find its answer in the cache
// across runs (link_map.cpp): the identity of the file and the versions it requires of other
// objects (DT_VERNEED), as owned strings. Kept in that cache under the identity read_elf_dynamic
// took from the file it read (elf_dynamic_identity), so a warm run neither opens the file again
// nor maps it for its symbol tables (read_elf_symbols): mapping and parsing every object of
// torch's tree was most of a check whose answer came from the cache (issue 40).
#pragma once

#include "probe/elf_symbols.hpp"
#include "probe/node_path.hpp"
#include "util/file_cache.hpp"

#include <optional>
#include <string>
#include <vector>

namespace probe {

struct ElfLinkSummary {
  struct VersionNeed {
    std::string file;    // "libstdc++.so.6"
    std::string version; // "GLIBCXX_3.4.32"
    bool weak = false;   // VER_FLG_WEAK
  };
  util::FileIdentity identity;            // of the file described
  std::vector<VersionNeed> version_needs; // ElfSymbols::version_needs(), in order
};

// The summary of the file read_elf_dynamic read, from the cache across runs: nullopt without a
// cache or an identity of the file, and when nothing was stored under that identity.
std::optional<ElfLinkSummary> cached_elf_link_summary(const NodeFile& file);

// The summary of symbols, read from file (its identity is the mapped file's); stored in the cache
// across runs when the run has one.
ElfLinkSummary elf_link_summary(const NodeFile& file, const ElfSymbols& symbols);

} // namespace probe
