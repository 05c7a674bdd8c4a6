// A model of one process's link map, built the way glibc's dynamic loader builds it and checked
// the way it binds, without loading anything (elf/dl-open.c, dl-deps.c, dl-lookup.c,
// dl-version.c):
//   - open(path) maps the object and then its DT_NEEDED tree breadth first; a NEEDED name that
//     matches an object already in the process (by SONAME or a name it was loaded under) reuses
//     it, any other name goes through the search of loader_model.hpp with the requester's
//     RPATH/RUNPATH;
//   - the objects one open() brings in resolve their undefined symbols in the global scope (the
//     executable's tree, then every RTLD_GLOBAL open in order) followed by the open's own local
//     scope (the root and its NEEDED tree, including objects loaded before): an extension that
//     Python imports with RTLD_LOCAL sees torch's libraries only through its own NEEDED entries;
//   - a symbol resolves when an object of that scope defines it (a versioned reference needs that
//     version, through the object's .gnu.hash/.hash); weak references may stay unresolved;
//   - every version an object requires of a loaded file (DT_VERNEED) must be defined there.
// Nothing is dlopened: the ELF files are mapped read-only and only their symbol tables are read.
//
// Cost: whether a reference resolves does not depend on the order the scope is searched in (only
// which definition binds does), so each reference asks the likely definers first — the object
// its version is required of, then the requester's own NEEDED objects, the one that served it
// last first — and the whole scope only when they lack it.
#pragma once

#include "probe/elf_link_summary.hpp"
#include "probe/elf_reader.hpp"
#include "probe/elf_symbols.hpp"
#include "probe/loader_model.hpp"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace probe {

struct LinkedObject {
  std::string path;               // node path as opened
  std::string real;               // symlinks resolved
  std::string soname;             // DT_SONAME, else the file name
  std::vector<std::string> names; // every name it was loaded under
  ElfDynamic dynamic;
  ElfLinkSummary summary; // identity and version needs: what the check's key needs
  // Read when the object is loaded, unless its summary came from the cache across runs: then
  // only when a check that is not in that cache needs it (nullptr until then).
  std::shared_ptr<const ElfSymbols> symbols;
};

struct MissingLibrary {
  std::string name;      // the NEEDED entry
  std::string needed_by; // file name of the object that needs it
  std::string reason;    // what the loader's search tried
};

struct UnresolvedSymbol {
  std::string mangled;
  std::string demangled;
  std::string version;      // "" when unversioned
  std::string version_file; // the file the version is required of
  std::string needed_by;    // file name of the object whose reference it is
};

struct LinkResult {
  bool opened = false;
  std::string error;                         // when !opened: the root itself is not a loadable object
  std::vector<MissingLibrary> missing;       // NEEDED names the search does not find
  std::vector<UnresolvedSymbol> unresolved;  // in the order the objects were loaded
  std::vector<std::string> missing_versions; // "GLIBCXX_3.4.32 of libstdc++.so.6 (required by x.so)"
  std::vector<std::size_t> scope;            // the open's local scope, indexes into objects()
};

class LinkMap {
public:
  explicit LinkMap(LoaderView view) : m_view(std::move(view)) {}

  // dlopen(node_path) with RTLD_GLOBAL when global; check: resolve the symbols of the objects
  // this open brings in (off for the interpreter itself, which is already running).
  LinkResult open(const std::string& node_path, bool global, bool check);

  const std::vector<LinkedObject>& objects() const { return m_objects; }
  // The loaded object named name (SONAME or a name it was loaded under), or nullptr.
  const LinkedObject* find(std::string_view name) const;

private:
  struct NameHash { // looks up std::string keys by std::string_view without a copy
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::optional<std::size_t> loaded(std::string_view name) const;
  util::Result<std::size_t> load(const std::string& node_path, const std::string& name);
  void add_name(std::size_t index, const std::string& name);
  // Reads the symbols of the objects loaded without them (load) before a check reads them from
  // several threads. A file that cannot be read any more went since it was loaded: it is added
  // to result.missing and false returned. changed: a file read is not the one its summary
  // described (the check then reads another file than its key names).
  bool read_symbols(const std::vector<std::size_t>& objects, LinkResult& result, bool& changed);
  // One open's lookup scope.
  struct Scope {
    std::vector<std::size_t> lookup; // in order
    std::vector<char> in_lookup;     // by object index
  };
  // Whether an object of the scope defines u; first the object its version is required of
  // (version_files: the requester's DT_VERNEED files by the file name's address in its string
  // table), then the objects in likely (the requester's NEEDED, reordered by use). Reads only:
  // threads may ask at once, each with its own likely.
  bool resolves(const ElfUndefinedSymbol& u, const Scope& scope, const std::vector<std::pair<const char*, std::size_t>>& version_files,
                std::vector<std::size_t>& likely) const;

  // The cache across runs (util/file_cache.hpp) of one open's check: its key, from the identity
  // of every file the check reads, and the result's form in it. The key needs of each object only
  // its summary (elf_link_summary.hpp), so a check found there maps no object for its symbols.
  std::string check_key(const std::vector<std::size_t>& lookup, const std::vector<std::size_t>& fresh) const;
  static std::string encode_check(const LinkResult& r);
  static bool decode_check(std::string_view text, LinkResult& r);

  LoaderView m_view;
  std::vector<LinkedObject> m_objects;
  std::vector<std::size_t> m_global;                                                 // the global scope, in order
  std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>> m_by_name; // SONAME, path, names: the first object
  std::unordered_map<std::string, std::size_t> m_by_real;                            // the file, symlinks resolved
};

} // namespace probe
