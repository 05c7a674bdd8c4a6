// The dynamic section of an ELF shared object, read with libelf without loading the file:
// DT_SONAME, DT_NEEDED, DT_RUNPATH and DT_RPATH — what the dynamic loader uses to decide which
// file satisfies a NEEDED name. Only elf_reader.cpp includes <libelf.h>/<gelf.h>.
#pragma once

#include "probe/node_path.hpp"
#include "util/file_cache.hpp"
#include "util/result.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace probe {

struct ElfDynamic {
  std::string soname;                  // empty when the object has none
  std::vector<std::string> needed;     // DT_NEEDED names, in order
  std::vector<std::string> runpath;    // DT_RUNPATH entries, unexpanded ("$ORIGIN/../lib")
  std::vector<std::string> rpath;      // DT_RPATH entries, unexpanded
  bool is_64bit = false;
  unsigned machine = 0;                // e_machine (EM_X86_64 = 62, EM_AARCH64 = 183)
};

// Reads the file's dynamic section (opened with open_node_file: inside its tree, a regular file
// only). Fails with parse for a file that is not ELF, is truncated or has no readable dynamic
// section, with not_found / permission when it cannot be opened.
util::Result<ElfDynamic> read_elf_dynamic(const NodeFile& file);
// The identity (util/file_cache.hpp) of the file read_elf_dynamic read, from the descriptor it
// read, so that other values of the file can be found in the cache across runs without opening
// it again: nullopt without a file cache (no identity is taken then), or when it was unreadable.
std::optional<util::FileIdentity> elf_dynamic_identity(const NodeFile& file);

// Where a section's bytes lie in the file (for bounded searches in huge libraries).
struct ElfSectionRange {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// The file range of the section called name (".rodata"). Reads only the ELF and section headers
// and the section-name table. Fails with not_found when the file has no such section (or no
// section headers), parse when it is not ELF.
util::Result<ElfSectionRange> read_elf_section_range(const NodeFile& file, std::string_view name);

// Expands $ORIGIN / ${ORIGIN} in one RUNPATH/RPATH entry; origin_dir is the node directory of the
// object that carries the entry. $LIB and $PLATFORM are left as they are.
std::string expand_origin(std::string_view entry, std::string_view origin_dir);

// The machine this build runs on, to compare with ElfDynamic::machine.
unsigned native_elf_machine();

} // namespace probe
