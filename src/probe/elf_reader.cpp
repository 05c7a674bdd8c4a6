// libelf walk: find the SHT_DYNAMIC section, read its entries with gelf_getdyn and the strings
// from the section it links to (.dynstr). RUNPATH/RPATH values are colon-separated lists.
#include "probe/elf_reader.hpp"

#include "probe/node_path.hpp"

#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/file_cache.hpp"
#include "util/strings.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <cstdlib>
#include <memory>
#include <optional>

namespace probe {

namespace {

// Owns an Elf* from elf_begin.
class ElfHandle {
public:
  explicit ElfHandle(Elf* elf) : m_elf(elf) {}
  ElfHandle(const ElfHandle&) = delete;
  ElfHandle& operator=(const ElfHandle&) = delete;
  ~ElfHandle() {
    if (m_elf) elf_end(m_elf);
  }
  Elf* get() const { return m_elf; }

private:
  Elf* m_elf;
};

// libelf initialised and file open for reading: the descriptor, which must outlive the
// handle (members go in reverse order), and the handle (null when libelf cannot read the file).
struct OpenElf {
  explicit OpenElf(util::Fd file) : fd(std::move(file)), elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr)) {}
  util::Fd fd;
  ElfHandle elf;
};

util::Result<std::unique_ptr<OpenElf>> open_elf(util::Fd fd) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return util::Error{util::ErrorKind::io, std::string("libelf: ") + elf_errmsg(-1)};
  }
  return std::make_unique<OpenElf>(std::move(fd));
}

util::Result<std::unique_ptr<OpenElf>> open_elf(const NodeFile& file) {
  util::Fd fd = NVTE_TRY(open_node_file(file));
  return open_elf(std::move(fd));
}

// The cache's form of a dynamic section (util/file_cache.hpp): soname, class, machine, then each
// list as its length and entries.
std::string encode(const util::Result<ElfDynamic>& r) {
  // A file that is no ELF object stays one until it changes: its error is cached too.
  if (!r) return util::pack_strings(std::vector<std::string>{"error", std::to_string(static_cast<int>(r.error().kind)), r.error().message});
  const ElfDynamic& d = *r;
  std::vector<std::string> parts{"ok", d.soname, d.is_64bit ? "1" : "0", std::to_string(d.machine)};
  for (const auto* list : {&d.needed, &d.runpath, &d.rpath}) {
    parts.push_back(std::to_string(list->size()));
    parts.insert(parts.end(), list->begin(), list->end());
  }
  return util::pack_strings(parts);
}

std::optional<util::Result<ElfDynamic>> decode(std::string_view text) {
  auto parts = util::unpack_strings(text);
  if (parts && parts->size() == 3 && (*parts)[0] == "error") {
    auto kind = static_cast<util::ErrorKind>(std::strtol((*parts)[1].c_str(), nullptr, 10));
    return util::Result<ElfDynamic>(util::Error{kind, (*parts)[2]});
  }
  if (!parts || parts->size() < 7 || (*parts)[0] != "ok") return std::nullopt;
  ElfDynamic d;
  d.soname = (*parts)[1];
  d.is_64bit = (*parts)[2] == "1";
  d.machine = static_cast<unsigned>(std::strtoul((*parts)[3].c_str(), nullptr, 10));
  std::size_t at = 4;
  for (auto* list : {&d.needed, &d.runpath, &d.rpath}) {
    if (at >= parts->size()) return std::nullopt;
    std::size_t n = std::strtoul((*parts)[at++].c_str(), nullptr, 10);
    if (n > parts->size() - at) return std::nullopt;
    list->assign(parts->begin() + static_cast<std::ptrdiff_t>(at), parts->begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  if (at != parts->size()) return std::nullopt;
  return util::Result<ElfDynamic>(std::move(d));
}

void append_list(std::vector<std::string>& out, std::string_view value) {
  for (auto part : util::split(value, ':')) {
    if (!part.empty()) out.emplace_back(part);
  }
}

} // namespace

unsigned native_elf_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_NONE;
#endif
}

namespace {

// One file's dynamic section and the identity of what was read, memoised together per run.
struct DynamicRead {
  util::Result<ElfDynamic> dynamic;
  std::optional<util::FileIdentity> identity;
};

DynamicRead read_elf_dynamic_uncached(const NodeFile& file);

std::shared_ptr<const DynamicRead> read_memoised(const NodeFile& file) {
  auto value = node_memo_value("elf_dynamic", file.host().string(),
                               [&] { return std::make_shared<const DynamicRead>(read_elf_dynamic_uncached(file)); });
  return std::static_pointer_cast<const DynamicRead>(value);
}

} // namespace

util::Result<ElfDynamic> read_elf_dynamic(const NodeFile& file) { return read_memoised(file)->dynamic; }

std::optional<util::FileIdentity> elf_dynamic_identity(const NodeFile& file) { return read_memoised(file)->identity; }

namespace {

util::Result<ElfDynamic> parse_elf_dynamic(util::Fd fd, const NodeFile& file);

// Through the cache across runs when the run has one: the file's identity from the descriptor
// that would be read, so what is reused is what this file holds now.
DynamicRead read_elf_dynamic_uncached(const NodeFile& file) {
  util::FileCache* cache = node_file_cache();
  const std::string key = file.host().string();
  // On the live system one stat says the identity a stored answer needs, and a file it answers
  // for is never opened (with TE's and torch's 41 objects, five system calls each fewer on the
  // probe's critical path). The open below takes the identity again from what it reads.
  if (cache && is_live_root(file.root)) {
    struct stat st {};
    if (::stat(key.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      const util::FileIdentity id = util::file_identity(st);
      if (auto text = cache->find("elf_dynamic", key, id)) {
        if (auto d = decode(*text)) return {std::move(*d), id};
      }
    }
  }
  auto opened = open_node_file(file);
  if (!opened) return {opened.error(), std::nullopt};
  util::Fd fd = std::move(opened).value();
  if (!cache) return {parse_elf_dynamic(std::move(fd), file), std::nullopt};
  std::optional<util::FileIdentity> id;
  if (auto i = util::file_identity(fd.get())) id = *i;
  if (id) {
    if (auto text = cache->find("elf_dynamic", key, *id)) {
      if (auto d = decode(*text)) return {std::move(*d), id};
    }
  }
  auto parsed = parse_elf_dynamic(std::move(fd), file);
  if (id && (parsed || parsed.error().kind == util::ErrorKind::parse)) cache->put("elf_dynamic", key, *id, encode(parsed));
  return {std::move(parsed), id};
}

util::Result<ElfDynamic> parse_elf_dynamic(util::Fd fd, const NodeFile& file) {
  auto opened = NVTE_TRY(open_elf(std::move(fd)));
  const ElfHandle& elf = opened->elf;
  auto fail = [&](std::string_view what) {
    return util::Error{util::ErrorKind::parse, file.host().string() + ": " + std::string(what) + ": " + elf_errmsg(-1)};
  };
  if (!elf.get()) return fail("not readable as ELF");
  if (elf_kind(elf.get()) != ELF_K_ELF) {
    return util::Error{util::ErrorKind::parse, file.host().string() + ": not an ELF file"};
  }
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf.get(), &ehdr)) return fail("no ELF header");
  ElfDynamic out;
  out.is_64bit = gelf_getclass(elf.get()) == ELFCLASS64;
  out.machine = ehdr.e_machine;

  bool found = false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) return fail("bad section header");
    if (shdr.sh_type != SHT_DYNAMIC) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) return fail("unreadable dynamic section (truncated file?)");
    found = true;
    std::size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) return fail("bad dynamic entry");
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag != DT_SONAME && dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH) continue;
      const char* text = elf_strptr(elf.get(), shdr.sh_link, dyn.d_un.d_val);
      if (!text) return fail("bad dynamic string");
      switch (dyn.d_tag) {
      case DT_SONAME: out.soname = text; break;
      case DT_NEEDED: out.needed.emplace_back(text); break;
      case DT_RUNPATH: append_list(out.runpath, text); break;
      case DT_RPATH: append_list(out.rpath, text); break;
      default: break;
      }
    }
  }
  if (!found) {
    return util::Error{util::ErrorKind::parse, file.host().string() + ": no dynamic section (not a shared object, or truncated)"};
  }
  return out;
}

} // namespace

util::Result<ElfSectionRange> read_elf_section_range(const NodeFile& file, std::string_view name) {
  auto opened = NVTE_TRY(open_elf(file));
  const ElfHandle& elf = opened->elf;
  if (!elf.get() || elf_kind(elf.get()) != ELF_K_ELF) {
    return util::Error{util::ErrorKind::parse, file.host().string() + ": not an ELF file"};
  }
  std::size_t names = 0;
  if (elf_getshdrstrndx(elf.get(), &names) != 0) {
    return util::Error{util::ErrorKind::not_found, file.host().string() + ": no section name table"};
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) break;
    const char* section = elf_strptr(elf.get(), names, shdr.sh_name);
    if (section && name == section && shdr.sh_type != SHT_NOBITS) return ElfSectionRange{shdr.sh_offset, shdr.sh_size};
  }
  return util::Error{util::ErrorKind::not_found, file.host().string() + ": no section " + std::string(name)};
}

std::string expand_origin(std::string_view entry, std::string_view origin_dir) {
  std::string out;
  for (std::size_t i = 0; i < entry.size();) {
    if (entry.compare(i, 9, "${ORIGIN}") == 0) {
      out += origin_dir;
      i += 9;
    } else if (entry.compare(i, 7, "$ORIGIN") == 0 && (i + 7 == entry.size() || entry[i + 7] == '/')) {
      out += origin_dir;
      i += 7;
    } else {
      out += entry[i++];
    }
  }
  return out;
}

} // namespace probe
