// Bytecode of a package as Python's source loader judges it (bytecode.hpp). The checks follow
// CPython's SourceFileLoader.get_code: a header it refuses (EOFError, ImportError) or a timestamp
// that does not match makes it compile the source; hash-based files are taken as they are here
// (a checked one costs Python a read and a hash of the source, not a compile).
#include "probe/bytecode.hpp"

#include "probe/node_path.hpp"

#include <cstdint>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace probe {

namespace {

std::uint32_t le32(std::string_view bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

// Whether the user the doctor runs as may write where Python keeps the bytecode: cache_dir, or
// when it is missing (Python makes it), parent (faccessat with the effective ids: a read-only
// mount says no even to root).
std::optional<bool> writable_dir(const std::filesystem::path& root, const std::string& cache_dir, const std::string& parent) {
  auto real = resolve_node_path(root, cache_dir);
  if (!real) real = resolve_node_path(root, parent);
  if (!real) return std::nullopt;
  return ::faccessat(AT_FDCWD, host_path(root, real->real).c_str(), W_OK, AT_EACCESS) == 0;
}

} // namespace

std::string cpython_cache_tag(long major, long minor) { return "cpython-" + std::to_string(major) + std::to_string(minor); }

std::optional<BytecodeState> package_bytecode(const std::filesystem::path& root, const std::string& package_dir, std::string_view cache_tag,
                                              const std::string& pycache_prefix) {
  auto source = open_node_file(NodeFile(root, package_dir + "/__init__.py"));
  struct stat st {};
  if (!source || ::fstat(source->get(), &st) != 0) return std::nullopt;
  // PYTHONPYCACHEPREFIX mirrors the source's directory under the prefix, without __pycache__.
  std::string cache_dir = pycache_prefix.empty() ? package_dir + "/__pycache__" : pycache_prefix + package_dir;
  std::string pyc_name = "__init__." + std::string(cache_tag) + ".pyc";
  std::string shown = pycache_prefix.empty() ? "__pycache__/" + pyc_name : cache_dir + "/" + pyc_name;
  BytecodeState state;
  state.writable = writable_dir(root, cache_dir, pycache_prefix.empty() ? package_dir : pycache_prefix);
  auto header = read_node_file_head(root, cache_dir + "/" + pyc_name, 16);
  if (!header) {
    state.status = "missing";
    state.reason = header.error().kind == util::ErrorKind::not_found ? "no " + shown : shown + ": " + header.error().message;
    return state;
  }
  const std::string& h = *header;
  state.status = "stale";
  if (h.size() < 16) {
    state.reason = shown + " is " + std::to_string(h.size()) + " bytes, shorter than its 16-byte header";
    return state;
  }
  // The magic number's value is the interpreter's (the file name carries its version already);
  // every CPython 3 magic ends in "\r\n".
  if (h[2] != '\r' || h[3] != '\n') {
    state.reason = shown + " does not start with a CPython magic number";
    return state;
  }
  std::uint32_t flags = le32(h, 4);
  if (flags & ~std::uint32_t{3}) {
    state.reason = shown + " has flags " + std::to_string(flags) + ", which Python refuses";
    return state;
  }
  state.status = "ok";
  if (flags & 1) {
    state.reason = shown + " is hash-based (" + std::string(flags & 2 ? "checked" : "unchecked") + ", PEP 552)";
    return state;
  }
  auto source_mtime = static_cast<std::uint32_t>(st.st_mtim.tv_sec);
  auto source_size = static_cast<std::uint32_t>(st.st_size);
  std::uint32_t pyc_mtime = le32(h, 8);
  std::uint32_t pyc_size = le32(h, 12);
  if (pyc_mtime != source_mtime || pyc_size != source_size) {
    state.status = "stale";
    state.reason = shown + " records source mtime " + std::to_string(pyc_mtime) + " and size " + std::to_string(pyc_size) +
                   "; __init__.py has mtime " + std::to_string(source_mtime) + " and size " + std::to_string(source_size);
    return state;
  }
  state.reason = shown + " matches __init__.py's mtime and size";
  return state;
}

} // namespace probe
