// Fuzz target: the ELF dynamic-section reader (libelf: headers, section table, DT_SONAME,
// DT_NEEDED, DT_RUNPATH/RPATH string offsets) and the dynamic symbol reader (elf_symbols: the
// mapped .dynsym, .gnu.hash/.hash, version tables, and a lookup through them). The reader takes a path, so the input goes to a
// memfd that is read through /proc/self/fd.
#include "fuzz_common.hpp"
#include "probe/elf_reader.hpp"
#include "probe/elf_symbols.hpp"

#include <string>
#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("fuzz-elf", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  (void)probe::read_elf_dynamic(path);
  if (auto symbols = probe::read_elf_symbols(path)) {
    for (const auto& u : (*symbols)->undefined()) (void)(*symbols)->defines(u.name, probe::gnu_hash(u.name), u.version);
    (void)(*symbols)->defines("cublasLtCreate", probe::gnu_hash("cublasLtCreate"), "libcublasLt.so.13");
  }
  return 0;
}
