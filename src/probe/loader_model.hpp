// A model of glibc's search for a DT_NEEDED name (elf/dl-load.c, _dl_map_object), run on a node
// tree instead of in a process:
//   1. a name with a '/' is used as a path;
//   2. DT_RPATH of the requesting object, only when it has no DT_RUNPATH;
//   3. LD_LIBRARY_PATH;
//   4. DT_RUNPATH of the requesting object (for its own NEEDED names only, not transitively);
//   5. /etc/ld.so.cache;
//   6. the default directories: /lib/<triplet>, /usr/lib/<triplet> (Debian/Ubuntu multiarch),
//      /lib64, /usr/lib64 (RHEL), /lib, /usr/lib.
// A candidate that is missing, not ELF, truncated or of another machine is skipped and the search
// goes on, as the loader does. Every resolution says why it won ("RUNPATH $ORIGIN/../lib of
// libtorch_cuda.so") so a finding can show it.
#pragma once

#include "probe/elf_reader.hpp"
#include "probe/ld_cache.hpp"
#include "probe/probe.hpp"

#include <string>
#include <vector>

namespace probe {

struct LoaderView {
  std::filesystem::path root = "/";
  std::vector<std::string> ld_library_path; // node directories, in order
  const LdCache* cache = nullptr;           // nullptr: the node has no readable cache
  std::vector<std::string> default_dirs;    // node directories, in order
};

// The view of a Host: its LD_LIBRARY_PATH and the default directories for this machine.
LoaderView make_loader_view(const Host& host, const LdCache* cache);

struct Resolution {
  std::string path;   // the node path the loader opens (symlinks not resolved)
  std::string step;   // rpath, ld_library_path, runpath, ld_cache, default_dirs, path
  std::string reason; // "RUNPATH $ORIGIN/../../nvidia/cudnn/lib of libtorch_cuda.so"
};

struct Requester {
  std::string path;            // node path of the object whose NEEDED is resolved ("" = a dlopen from a plain process)
  const ElfDynamic* dynamic = nullptr; // its dynamic section, nullptr when it has none
};

// Where the loader would find `name` for requester. Fails with not_found listing what was tried.
util::Result<Resolution> resolve_needed(const LoaderView& view, std::string_view name, const Requester& requester);

} // namespace probe
