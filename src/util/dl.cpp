#include "util/dl.hpp"

#include <dlfcn.h>
#include <link.h>
#include <utility>

namespace util {

DlLibrary::DlLibrary(DlLibrary&& other) noexcept
    : m_handle(std::exchange(other.m_handle, nullptr)), m_name(std::move(other.m_name)) {}

namespace {

// Under AddressSanitizer a loaded library stays mapped: LeakSanitizer runs at exit and can name a
// foreign library's own allocations (NVRTC's C++ runtime pool, ...) and match them against
// scripts/lsan.supp only while the library is still mapped. Otherwise dlclose, as everywhere.
void close_library(void* handle) {
#if defined(__SANITIZE_ADDRESS__)
  (void)handle;
#else
  ::dlclose(handle);
#endif
}

} // namespace

DlLibrary& DlLibrary::operator=(DlLibrary&& other) noexcept {
  if (this != &other) {
    if (m_handle) close_library(m_handle);
    m_handle = std::exchange(other.m_handle, nullptr);
    m_name = std::move(other.m_name);
  }
  return *this;
}

DlLibrary::~DlLibrary() {
  if (m_handle) close_library(m_handle);
}

Result<DlLibrary> DlLibrary::open(const std::string& name_or_path, LinkNamespace ns) {
  ::dlerror();
  void* handle = ns == LinkNamespace::fresh    ? ::dlmopen(LM_ID_NEWLM, name_or_path.c_str(), RTLD_NOW | RTLD_LOCAL)
                 : ns == LinkNamespace::global ? ::dlopen(name_or_path.c_str(), RTLD_NOW | RTLD_GLOBAL)
                                               : ::dlopen(name_or_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    std::string text = why ? why : "unknown dlopen error";
    bool missing = text.find("No such file") != std::string::npos ||
                   text.find("cannot open shared object file") != std::string::npos;
    return Error{missing ? ErrorKind::not_installed : ErrorKind::io,
                 "cannot load " + name_or_path + ": " + text};
  }
  DlLibrary library;
  library.m_handle = handle;
  library.m_name = name_or_path;
  return library;
}

Result<void*> DlLibrary::symbol(const char* name) const {
  ::dlerror();
  void* address = ::dlsym(m_handle, name);
  if (!address) {
    return Error{ErrorKind::symbol_missing, m_name + " has no symbol " + name};
  }
  return address;
}

void* DlLibrary::symbol_or_null(const char* name) const { return m_handle ? ::dlsym(m_handle, name) : nullptr; }

std::string DlLibrary::loaded_path() const {
  link_map* map = nullptr;
  if (m_handle && ::dlinfo(m_handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
    return map->l_name;
  }
  return m_name;
}

} // namespace util
