// Every copy of a vendor library on a node. The places the doctor looks (each with a source
// label): site-packages nvidia/*/lib, nvidia/cu1X/lib and torch/lib of every interpreter
// (site_packages), conda env lib/ (conda), /usr/local/cuda*/compat (compat),
// /usr/local/cuda*/lib64, lib, targets/*/lib and $CUDA_HOME / $CUDA_PATH (cuda_home),
// LD_LIBRARY_PATH (ld_library_path), the system directories (system) and every ld.so.cache entry
// (ld_cache). A copy is one real file: libcudnn.so -> .so.9 -> .so.9.14.0 is one copy, first
// seen in the most specific place above. Broken or looping symlinks and files that are not
// loadable ELF objects are reported as problems, not copies.
#pragma once

#include "probe/elf_reader.hpp"
#include "probe/interpreters.hpp"
#include "probe/ld_cache.hpp"
#include "probe/library_version.hpp"

#include <map>
#include <string>
#include <vector>

namespace probe {

struct SearchDir {
  std::string dir;    // node path
  std::string source; // label, see above
};

// The directories to search, most specific first, without duplicates.
std::vector<SearchDir> library_search_dirs(const Host& host, const std::vector<Interpreter>& interpreters);

struct LibraryCopy {
  std::string real_path;            // node path, every symlink resolved
  std::vector<std::string> seen_as; // the names that led to it
  std::string source;
  std::string soname;               // DT_SONAME ("" when it has none)
  std::optional<CopyVersion> version;
};

struct CopyScan {
  std::vector<LibraryCopy> copies;
  std::vector<std::string> problems;
};

// Finds the copies of one library in dirs and in the ld.so.cache entries (cache may be null).
CopyScan find_copies(const std::filesystem::path& root, const LibrarySpec& spec, const std::vector<SearchDir>& dirs,
                     const LdCache* cache);

} // namespace probe
