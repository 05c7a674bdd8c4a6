// Version sources of library_version.hpp. Headers are read as text (#define NAME value); the
// embedded strings are found with memmem over a read-only mmap of the file, so a 200 MB libnccl
// is scanned without copying it.
#include "probe/library_version.hpp"

#include "probe/elf_reader.hpp"
#include "probe/node_path.hpp"
#include "util/defer.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace probe {

namespace {

constexpr std::size_t k_header_head = 64u << 10;

const LibrarySpec k_specs[] = {
    {"cudnn", "libcudnn", "nvidia_cudnn", gpuapi::VersionedLibrary::cudnn},
    {"nccl", "libnccl", "nvidia_nccl", gpuapi::VersionedLibrary::nccl},
    {"nvrtc", "libnvrtc", "nvidia_cuda_nvrtc", gpuapi::VersionedLibrary::nvrtc},
    {"cudart", "libcudart", "nvidia_cuda_runtime", gpuapi::VersionedLibrary::cudart},
    // One wheel ships both (nvidia-cublas-cu12; for CUDA 13 nvidia-cublas, in nvidia/cu13/lib).
    {"cublas", "libcublas", "nvidia_cublas", gpuapi::VersionedLibrary::cublas},
    {"cublaslt", "libcublasLt", "nvidia_cublas", gpuapi::VersionedLibrary::cublaslt},
    {"libcuda", "libcuda", "", std::nullopt},
};

bool digits_and_dots(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  for (char c : s) {
    if (!(c == '.' || (c >= '0' && c <= '9'))) return false;
  }
  return s.find("..") == std::string_view::npos;
}

// "#define NAME value" -> value, from the header's lines.
std::optional<long> define_value(const std::vector<std::string_view>& lines, std::string_view name) {
  for (auto line : lines) {
    line = util::trim(line);
    if (!util::starts_with(line, "#define")) continue;
    auto rest = util::trim(line.substr(7));
    if (!util::starts_with(rest, name)) continue;
    rest = rest.substr(name.size());
    if (rest.empty() || (rest[0] != ' ' && rest[0] != '\t')) continue;
    auto value = util::trim(rest);
    value = value.substr(0, value.find_first_of(" \t/"));
    if (auto n = util::parse_int(value)) return static_cast<long>(*n);
  }
  return std::nullopt;
}

std::optional<model::Version> version_in_header(const LibrarySpec& spec, std::string_view header) {
  const std::vector<std::string_view> text = util::split(header, '\n');
  auto triple = [&](std::string_view a, std::string_view b, std::string_view c) -> std::optional<model::Version> {
    auto x = define_value(text, a), y = define_value(text, b), z = define_value(text, c);
    if (!x || !y || !z) return std::nullopt;
    return model::Version{*x, *y, *z};
  };
  if (spec.key == "cudnn") return triple("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL");
  if (spec.key == "nccl") return triple("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH");
  if (spec.key == "cudart") {
    if (auto v = define_value(text, "CUDART_VERSION")) return model::Version{*v / 1000, (*v % 1000) / 10};
  }
  if (spec.key == "cublas" || spec.key == "cublaslt") {
    // cublas_api.h: CUBLAS_VER_MAJOR 13, _MINOR 1, _PATCH 0, _BUILD 3 -> 13.1.0.3, the wheel's
    // version; cuBLASLt is released with cuBLAS and has no header of its own for it.
    auto major = define_value(text, "CUBLAS_VER_MAJOR"), minor = define_value(text, "CUBLAS_VER_MINOR");
    auto patch = define_value(text, "CUBLAS_VER_PATCH"), build = define_value(text, "CUBLAS_VER_BUILD");
    if (!major || !minor || !patch) return std::nullopt;
    if (build) return model::Version{*major, *minor, *patch, *build};
    return model::Version{*major, *minor, *patch};
  }
  return std::nullopt;
}

std::vector<std::string_view> headers_of(const LibrarySpec& spec) {
  if (spec.key == "cudnn") return {"cudnn_version.h", "cudnn.h"};
  if (spec.key == "nccl") return {"nccl.h"};
  if (spec.key == "cudart") return {"cuda_runtime_api.h"};
  if (spec.key == "cublas" || spec.key == "cublaslt") return {"cublas_api.h"};
  return {};
}

// A read-only mapping of a whole file.
class MappedFile {
public:
  explicit MappedFile(const NodeFile& file) {
    auto fd = open_node_file(file);
    struct stat st {};
    if (!fd || ::fstat(fd->get(), &st) != 0 || st.st_size <= 0) return;
    void* data = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd->get(), 0);
    if (data == MAP_FAILED) return;
    m_data = static_cast<const char*>(data);
    m_size = static_cast<std::size_t>(st.st_size);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (m_data) ::munmap(const_cast<char*>(m_data), m_size);
  }
  std::string_view view() const { return {m_data ? m_data : "", m_size}; }

private:
  const char* m_data = nullptr;
  std::size_t m_size = 0;
};

// Every occurrence of needle followed by a version "12.3.4" (digits and dots); the first found.
std::optional<std::string> version_after(std::string_view haystack, std::string_view needle) {
  std::size_t from = 0;
  while (from < haystack.size()) {
    const void* hit = ::memmem(haystack.data() + from, haystack.size() - from, needle.data(), needle.size());
    if (!hit) return std::nullopt;
    std::size_t at = static_cast<std::size_t>(static_cast<const char*>(hit) - haystack.data()) + needle.size();
    std::size_t end = at;
    while (end < haystack.size() && end - at < 32 && (haystack[end] == '.' || (haystack[end] >= '0' && haystack[end] <= '9'))) ++end;
    std::string_view candidate = haystack.substr(at, end - at);
    while (!candidate.empty() && candidate.back() == '.') candidate.remove_suffix(1);
    if (candidate.find('.') != std::string_view::npos && digits_and_dots(candidate)) return std::string(candidate);
    from = at;
  }
  return std::nullopt;
}

} // namespace

std::span<const LibrarySpec> library_specs() { return k_specs; }

const LibrarySpec* find_library_spec(std::string_view key) {
  for (const auto& spec : k_specs) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

bool is_library_file(const LibrarySpec& spec, std::string_view name) {
  // Asked for every name of every search directory for every library (thousands of names in
  // /usr/lib/x86_64-linux-gnu): compare in place, no string built.
  if (!util::starts_with(name, spec.stem)) return false;
  std::string_view rest = name.substr(spec.stem.size());
  if (rest == ".so") return true;
  if (!util::starts_with(rest, ".so.")) return false;
  return digits_and_dots(rest.substr(4));
}

std::string so_suffix(const LibrarySpec& spec, std::string_view name) {
  std::string base = std::string(spec.stem) + ".so.";
  return util::starts_with(name, base) ? std::string(name.substr(base.size())) : std::string{};
}

std::optional<CopyVersion> version_from_file_name(const LibrarySpec& spec, std::string_view file_name) {
  if (!is_library_file(spec, file_name)) return std::nullopt;
  std::string suffix = so_suffix(spec, file_name);
  if (suffix.find('.') == std::string::npos) return std::nullopt;
  auto v = model::Version::parse(suffix);
  if (!v) return std::nullopt;
  return CopyVersion{*v, "file_name", std::string(file_name)};
}

std::optional<CopyVersion> version_from_header(const std::filesystem::path& root, const LibrarySpec& spec,
                                               const std::string& real_node_path, std::optional<long> major_hint) {
  auto headers = headers_of(spec);
  if (headers.empty()) return std::nullopt;
  std::filesystem::path lib_dir = std::filesystem::path(real_node_path).parent_path();
  std::vector<std::string> include_dirs = {normalize_node_path(lib_dir / ".." / "include").string()};
  std::string dir = lib_dir.string();
  std::string triplet = multiarch_triplet();
  if (dir == "/usr/lib/" + triplet || dir == "/usr/lib64" || dir == "/usr/lib" || dir == "/lib/" + triplet) {
    include_dirs = {"/usr/include/" + triplet, "/usr/include"};
  }
  for (const auto& inc : include_dirs) {
    for (auto header : headers) {
      std::string file = inc + "/" + std::string(header);
      // The version defines are within the first 8 KB of every release's header (cudnn_version.h,
      // nccl.h, cuda_runtime_api.h at 6 KB of its 600 KB, cublas_api.h at 3 KB of 330 KB).
      auto text = read_node_file_head(root, file, k_header_head);
      if (!text) continue;
      auto v = version_in_header(spec, *text);
      if (!v) continue;
      if (major_hint && v->major() != *major_hint) continue;
      return CopyVersion{*v, "header", file};
    }
  }
  return std::nullopt;
}

namespace {

// The needle and the version text after it, searched in the file.
std::optional<std::pair<std::string, std::string>> embedded_text(const LibrarySpec& spec, const NodeFile& host_file, std::string needle) {
  MappedFile file(host_file);
  // The strings live in .rodata: search only there (NVRTC's is 87 MB into a 109 MB file, 4 MB
  // into its .rodata), so the probe faults in a few MB rather than the whole library.
  std::string_view haystack = file.view();
  if (auto rodata = read_elf_section_range(host_file, ".rodata");
      rodata && rodata->offset < haystack.size()) {
    haystack = haystack.substr(rodata->offset, rodata->size);
  }
  auto text = version_after(haystack, needle);
  if (!text) return std::nullopt;
  if (spec.key == "nvrtc") {
    // "Cuda compilation tools, release 13.0, V13.0.88": the V part carries the patch.
    std::string full = needle + *text + ", V";
    if (auto precise = version_after(haystack, full)) {
      needle = full;
      text = precise;
    }
  }
  return std::pair{needle, *text};
}

// embedded_text through the cache across runs, keyed by the file's identity (node_file_cache):
// the search faults in megabytes of the library, its answer is a few bytes.
std::optional<std::pair<std::string, std::string>> cached_embedded_text(const LibrarySpec& spec, const NodeFile& host_file,
                                                                        const std::string& needle) {
  util::FileCache* cache = node_file_cache();
  std::optional<util::FileIdentity> id;
  if (cache) {
    if (auto fd = open_node_file(host_file)) {
      if (auto i = util::file_identity(fd->get())) id = *i;
    }
  }
  const std::string key = std::string(spec.key) + ":" + host_file.host().string();
  if (id) {
    if (auto text = cache->find("elf_string", key, *id)) {
      auto parts = util::unpack_strings(*text);
      if (parts && parts->empty()) return std::nullopt;
      if (parts && parts->size() == 2) return std::pair{(*parts)[0], (*parts)[1]};
    }
  }
  auto found = embedded_text(spec, host_file, needle);
  if (id) {
    std::vector<std::string> parts;
    if (found) parts = {found->first, found->second};
    cache->put("elf_string", key, *id, util::pack_strings(parts));
  }
  return found;
}

} // namespace

std::optional<CopyVersion> version_from_embedded_string(const LibrarySpec& spec, const NodeFile& host_file) {
  std::string needle;
  if (spec.key == "nccl") needle = "NCCL version ";
  else if (spec.key == "nvrtc") needle = "Cuda compilation tools, release ";
  else return std::nullopt;
  auto found = cached_embedded_text(spec, host_file, needle);
  if (!found) return std::nullopt;
  auto v = model::Version::parse(found->second);
  if (!v) return std::nullopt;
  return CopyVersion{*v, "elf_string", found->first + found->second};
}

util::Result<CopyVersion> version_from_loading(const LibrarySpec& spec, const std::filesystem::path& host_file,
                                               std::chrono::milliseconds timeout) {
  if (!spec.api) return util::Error{util::ErrorKind::unsupported, std::string(spec.key) + " has no version call"};
  auto raw = NVTE_TRY(gpuapi::query_library_version(*spec.api, host_file.string(), timeout));
  if (raw.empty()) return util::Error{util::ErrorKind::parse, host_file.string() + ": empty version answer"};
  model::Version v;
  switch (*spec.api) {
  case gpuapi::VersionedLibrary::cudnn:
  case gpuapi::VersionedLibrary::nccl: v = model::Version::from_packed(raw[0]); break;
  case gpuapi::VersionedLibrary::nvrtc: v = model::Version{raw[0], raw.size() > 1 ? raw[1] : 0}; break;
  case gpuapi::VersionedLibrary::cudart: v = model::Version{raw[0] / 1000, (raw[0] % 1000) / 10}; break;
  case gpuapi::VersionedLibrary::cublas: v = model::Version{raw[0], raw.size() > 1 ? raw[1] : 0, raw.size() > 2 ? raw[2] : 0}; break;
  case gpuapi::VersionedLibrary::cublaslt: v = model::Version{raw[0] / 10000, (raw[0] % 10000) / 100, raw[0] % 100}; break;
  }
  std::string call = "version call";
  if (*spec.api == gpuapi::VersionedLibrary::cudnn) call = "cudnnGetVersion";
  if (*spec.api == gpuapi::VersionedLibrary::cublaslt) call = "cublasLtGetVersion";
  if (*spec.api == gpuapi::VersionedLibrary::cublas) call = "cublasGetProperty";
  return CopyVersion{v, "loaded", call};
}

} // namespace probe
