// Child protocol: the child writes one line to the result pipe, "ok N [M]" or
// "err <kind> <message>", then exits 0. Anything else (no line, a signal, the timeout) is
// reported from the ChildOutcome.
#include "gpuapi/library_version.hpp"

#include "util/dl.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

#include <cstddef>

namespace gpuapi {

namespace {

using SizeVersion = std::size_t (*)(); // cudnnGetVersion, cublasLtGetVersion
using IntOut = int (*)(int*);
using TwoIntOut = int (*)(int*, int*);
using PropertyOut = int (*)(int, int*); // cublasGetProperty(libraryPropertyType, int*)

const char* symbol_of(VersionedLibrary library) {
  switch (library) {
  case VersionedLibrary::cudnn: return "cudnnGetVersion";
  case VersionedLibrary::nccl: return "ncclGetVersion";
  case VersionedLibrary::nvrtc: return "nvrtcVersion";
  case VersionedLibrary::cudart: return "cudaRuntimeGetVersion";
  case VersionedLibrary::cublas: return "cublasGetProperty";
  case VersionedLibrary::cublaslt: return "cublasLtGetVersion";
  }
  return "";
}

std::string ask(VersionedLibrary library, const std::string& path) {
  auto lib = util::DlLibrary::open(path, util::LinkNamespace::fresh);
  if (!lib) return "err " + std::string(util::to_string(lib.error().kind)) + " " + lib.error().message;
  auto address = lib->symbol(symbol_of(library));
  if (!address) return "err symbol_missing " + address.error().message;
  int a = 0;
  int b = 0;
  int status = 0;
  switch (library) {
  case VersionedLibrary::cudnn:
  case VersionedLibrary::cublaslt: return "ok " + std::to_string(util::function_cast<SizeVersion>(*address)());
  case VersionedLibrary::cublas: {
    std::string out = "ok";
    for (int property : {0, 1, 2}) { // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
      status = util::function_cast<PropertyOut>(*address)(property, &a);
      if (status != 0) break;
      out += " " + std::to_string(a);
    }
    if (status == 0) return out;
    break;
  }
  case VersionedLibrary::nccl: status = util::function_cast<IntOut>(*address)(&a); break;
  case VersionedLibrary::cudart: status = util::function_cast<IntOut>(*address)(&a); break;
  case VersionedLibrary::nvrtc:
    status = util::function_cast<TwoIntOut>(*address)(&a, &b);
    if (status == 0) return "ok " + std::to_string(a) + " " + std::to_string(b);
    break;
  }
  if (status != 0) return "err driver_error " + std::string(symbol_of(library)) + " returned " + std::to_string(status) + " in " + path;
  return "ok " + std::to_string(a);
}

util::ErrorKind kind_from(std::string_view text) {
  for (auto kind : {util::ErrorKind::not_installed, util::ErrorKind::symbol_missing, util::ErrorKind::driver_error,
                    util::ErrorKind::not_found, util::ErrorKind::permission}) {
    if (util::to_string(kind) == text) return kind;
  }
  return util::ErrorKind::io;
}

} // namespace

util::Result<std::vector<long>> query_library_version(VersionedLibrary library, const std::string& path,
                                                      std::chrono::milliseconds timeout) {
  auto outcome = NVTE_TRY(util::run_function(
      [&](int fd) {
        util::write_all(fd, ask(library, path) + "\n");
        return 0;
      },
      timeout, 4096));
  if (outcome.timed_out) {
    return util::Error{util::ErrorKind::timeout, std::string(symbol_of(library)) + " in " + path + ": " + outcome.describe()};
  }
  std::string_view line = util::trim(outcome.out);
  if (util::starts_with(line, "ok ")) {
    std::vector<long> numbers;
    for (auto part : util::split(line.substr(3), ' ')) {
      auto n = util::parse_int(part);
      if (!n) return util::Error{util::ErrorKind::parse, "bad answer from the version child: " + std::string(line)};
      numbers.push_back(static_cast<long>(*n));
    }
    return numbers;
  }
  if (util::starts_with(line, "err ")) {
    auto rest = line.substr(4);
    auto space = rest.find(' ');
    return util::Error{kind_from(rest.substr(0, space)), std::string(space == std::string_view::npos ? rest : rest.substr(space + 1))};
  }
  return util::Error{outcome.signal ? util::ErrorKind::crashed : util::ErrorKind::io,
                     "loading " + path + " to call " + symbol_of(library) + ": child " + outcome.describe()};
}

} // namespace gpuapi
