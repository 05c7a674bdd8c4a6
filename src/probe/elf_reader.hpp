// The dynamic section of an ELF shared object, read with libelf without loading the file:
// DT_SONAME, DT_NEEDED, DT_RUNPATH and DT_RPATH — what the dynamic loader uses to decide which
// file satisfies a NEEDED name. Only elf_reader.cpp includes <libelf.h>/<gelf.h>.
#pragma once

#include "util/result.hpp"

#include <filesystem>
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

// Reads host_file's dynamic section. Fails with parse for a file that is not ELF, is truncated or
// has no readable dynamic section, with not_found / permission when it cannot be opened.
util::Result<ElfDynamic> read_elf_dynamic(const std::filesystem::path& host_file);

// Expands $ORIGIN / ${ORIGIN} in one RUNPATH/RPATH entry; origin_dir is the node directory of the
// object that carries the entry. $LIB and $PLATFORM are left as they are.
std::string expand_origin(std::string_view entry, std::string_view origin_dir);

// The machine this build runs on, to compare with ElfDynamic::machine.
unsigned native_elf_machine();

} // namespace probe
