// DlLibrary: owns one dlopen'd (or dlmopen'd) shared object. Errors carry dlerror().
#pragma once

#include "util/result.hpp"

#include <string>
#include <string_view>

namespace util {

enum class LinkNamespace {
  shared, // the process's default namespace: a second copy with the same SONAME is not loaded
  fresh,  // a new link-map namespace (dlmopen LM_ID_NEWLM): this exact file is loaded, isolated
  global, // the default namespace with RTLD_GLOBAL: its symbols resolve later loads' undefined
          // ones, as ctypes.CDLL(..., RTLD_GLOBAL) makes them for TE's core library
};

class DlLibrary {
public:
  DlLibrary() = default;
  DlLibrary(DlLibrary&& other) noexcept;
  DlLibrary& operator=(DlLibrary&& other) noexcept;
  DlLibrary(const DlLibrary&) = delete;
  DlLibrary& operator=(const DlLibrary&) = delete;
  ~DlLibrary();

  // Loads name_or_path (a SONAME searched by the loader, or a path). Fails with not_installed
  // when the file is not found, otherwise with io and dlerror()'s text.
  static Result<DlLibrary> open(const std::string& name_or_path,
                                LinkNamespace ns = LinkNamespace::shared);

  // The address of symbol, or symbol_missing naming the library.
  Result<void*> symbol(const char* name) const;
  void* symbol_or_null(const char* name) const;

  // The path the loader actually mapped (dlinfo RTLD_DI_LINKMAP), or the name given.
  std::string loaded_path() const;
  const std::string& name() const { return m_name; }
  explicit operator bool() const { return m_handle != nullptr; }

private:
  void* m_handle = nullptr;
  std::string m_name;
};

// Casts a symbol address to a function pointer type.
template <typename Fn> Fn function_cast(void* address) {
  static_assert(sizeof(Fn) == sizeof(void*));
  Fn fn;
  __builtin_memcpy(&fn, &address, sizeof fn);
  return fn;
}

} // namespace util
