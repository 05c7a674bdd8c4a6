// The dynamic symbol interface of an ELF shared object, read from a read-only mapping of the file
// without loading it: its undefined dynamic symbols (with the version each asks for), the
// versions it requires of other objects (DT_VERNEED), the versions it defines (DT_VERDEF), and a
// lookup of "does this object define symbol S (version V)" through the object's own hash table
// (.gnu.hash, else .hash), accepting a definition the way glibc's check_match does
// (elf/dl-lookup.c). Only 64-bit little-endian objects are read: the machines the doctor runs on.
#pragma once

#include "probe/node_path.hpp"
#include "util/file_cache.hpp"
#include "util/result.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace probe {

struct ElfUndefinedSymbol {
  std::string_view name;         // mangled, as in .dynstr
  std::string_view version;      // "" when the reference is unversioned
  std::string_view version_file; // the DT_VERNEED file the version is required of ("libcublasLt.so.13")
  std::uint32_t hash = 0;        // gnu_hash(name), computed once per reference
};

struct ElfVersionNeed {
  std::string_view file;    // "libstdc++.so.6"
  std::string_view version; // "GLIBCXX_3.4.32"
  bool weak = false;        // VER_FLG_WEAK: a missing version is only a warning to ld.so
};

class ElfSymbols {
public:
  virtual ~ElfSymbols() = default;
  // Non-weak undefined dynamic symbols (weak ones may stay unresolved: ld.so binds them to 0).
  // Collected on the first call (objects only opened, never checked, do not pay for it); not
  // thread-safe, like the probe run that memoises the object.
  virtual const std::vector<ElfUndefinedSymbol>& undefined() const = 0;
  virtual const std::vector<ElfVersionNeed>& version_needs() const = 0;
  // Whether the object defines name; version "" for an unversioned reference. hash is
  // gnu_hash(name), passed in so a lookup over many objects hashes once.
  virtual bool defines(std::string_view name, std::uint32_t hash, std::string_view version) const = 0;
  // Whether the object defines the version (DT_VERDEF, the base entry excluded).
  virtual bool defines_version(std::string_view version) const = 0;
  // The identity (util/file_cache.hpp) of the file mapped, from the descriptor that was mapped.
  const util::FileIdentity& identity() const { return m_identity; }

protected:
  util::FileIdentity m_identity;
};

// The GNU hash of a symbol name (the dl_new_hash of glibc).
std::uint32_t gnu_hash(std::string_view name);

// Maps the file (open_node_file: inside its tree, a regular file only) and reads its dynamic
// symbol sections. The result keeps the mapping; names are views into it. Memoised per file during
// a probe run. Fails with parse for a file that is not a 64-bit little-endian ELF object with a
// dynamic symbol table, with not_found / permission when it cannot be opened.
util::Result<std::shared_ptr<const ElfSymbols>> read_elf_symbols(const NodeFile& file);

// A C++ symbol demangled by libstdc++ (abi::__cxa_demangle); the name itself when it is not one.
std::string demangle_symbol(std::string_view mangled);

} // namespace probe
