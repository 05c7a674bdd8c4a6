// Which vendor libraries the libraries probe looks for, and how the version of one copy is read,
// cheapest truthful source first:
//   1. file_name   — a versioned real file name: libcudnn.so.9.14.0, libnccl.so.2.28.3,
//                    libcuda.so.580.159.04 (a bare major, libcudnn.so.9, is not enough);
//   2. dist_info   — the owning wheel's METADATA when its RECORD lists the file (the caller
//                    passes what it found);
//   3. header      — the neighbouring include directory: cudnn_version.h, nccl.h,
//                    cuda_runtime_api.h, cublas_api.h (cuBLAS and cuBLASLt), when its major
//                    matches the file's SONAME major;
//   4. elf_string  — a string the vendor embeds: "NCCL version 2.28.9+cuda13.0",
//                    NVRTC's "release 13.0, V13.0.88";
//   5. loaded      — the library's own version call in a child process, fresh link namespace
//                    (gpuapi::query_library_version), only when allowed: cudnnGetVersion,
//                    ncclGetVersion, nvrtcVersion, cudaRuntimeGetVersion, cublasGetProperty,
//                    cublasLtGetVersion.
#pragma once

#include "gpuapi/library_version.hpp"
#include "model/version.hpp"
#include "probe/node_path.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace probe {

struct LibrarySpec {
  std::string_view key;         // fact prefix: cudnn, nccl, nvrtc, cudart, cublas, cublaslt, libcuda
  std::string_view stem;        // file stem: libcudnn (files libcudnn.so, libcudnn.so.9, ...)
  std::string_view dist_prefix; // wheels that ship it: nvidia_cudnn (normalized name prefix); "" none
  std::optional<gpuapi::VersionedLibrary> api; // its version call, if it has one we use
};

std::span<const LibrarySpec> library_specs();
const LibrarySpec* find_library_spec(std::string_view key);

// True for "libcudnn.so", "libcudnn.so.9", "libcudnn.so.9.14.0"; false for libcudnn_adv.so.9,
// libnvrtc-builtins.so.13.0, libnvrtc.alt.so.13, libcudnn.so.9.bak.
bool is_library_file(const LibrarySpec& spec, std::string_view file_name);

// The numbers after ".so." ("9.14.0"), empty for the dev link.
std::string so_suffix(const LibrarySpec& spec, std::string_view file_name);

struct CopyVersion {
  model::Version version;
  std::string source; // file_name, dist_info, header, elf_string, loaded
  std::string detail; // the header file, the string found, the dist-info directory ...
};

// 1. From a real file name with at least major.minor after ".so.".
std::optional<CopyVersion> version_from_file_name(const LibrarySpec& spec, std::string_view file_name);

// 3. From a header in an include directory next to the copy's lib directory (node paths).
// major_hint (from the SONAME) must match when given.
std::optional<CopyVersion> version_from_header(const std::filesystem::path& root, const LibrarySpec& spec,
                                               const std::string& real_node_path, std::optional<long> major_hint);

// 4. From a version string embedded in the file (read, never loaded).
std::optional<CopyVersion> version_from_embedded_string(const LibrarySpec& spec, const NodeFile& file);

// 5. By loading the copy (host path) in a child; the error says why not.
util::Result<CopyVersion> version_from_loading(const LibrarySpec& spec, const std::filesystem::path& host_file,
                                               std::chrono::milliseconds timeout);

} // namespace probe
