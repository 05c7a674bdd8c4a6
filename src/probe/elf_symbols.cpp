// The file is mapped read-only (MAP_PRIVATE) and read through the section headers: SHT_DYNSYM and
// its string table, SHT_GNU_HASH / SHT_HASH, SHT_GNU_versym, SHT_GNU_verdef, SHT_GNU_verneed.
// Every offset read from the file is checked against the mapping before use, so a truncated or
// hostile file is a parse error, never a read past the end. Only the pages a lookup touches are
// read from disk: a 500 MB libtorch_cpu.so costs its dynamic symbol table, not its code.
#include "probe/elf_symbols.hpp"

#include "probe/node_path.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"

#include <cerrno>
#include <cstring>
#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace probe {

std::uint32_t gnu_hash(std::string_view name) {
  std::uint32_t h = 5381;
  for (unsigned char c : name) h = h * 33 + c;
  return h;
}

std::string demangle_symbol(std::string_view mangled) {
  if (!mangled.starts_with("_Z")) return std::string(mangled);
  std::string name(mangled);
  int status = 0;
  char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !text) return name;
  std::unique_ptr<char, void (*)(void*)> owned(text, std::free);
  return std::string(owned.get());
}

namespace {

// A read-only mapping of a whole file, unmapped once.
class Mapping {
public:
  Mapping(const void* data, std::size_t size) : m_data(static_cast<const unsigned char*>(data)), m_size(size) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (m_data) ::munmap(const_cast<unsigned char*>(m_data), m_size);
  }
  const unsigned char* data() const { return m_data; }
  std::size_t size() const { return m_size; }
  // A pointer to count objects of T at offset, or nullptr when they do not lie inside the file.
  template <typename T>
  const T* at(std::uint64_t offset, std::uint64_t count = 1) const {
    if (offset > m_size || count > (m_size - offset) / sizeof(T)) return nullptr;
    if (offset % alignof(T) != 0) return nullptr;
    return reinterpret_cast<const T*>(m_data + offset);
  }

private:
  const unsigned char* m_data;
  std::size_t m_size;
};

struct Section {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint32_t info = 0;
  bool present = false;
};

class MappedSymbols final : public ElfSymbols {
public:
  explicit MappedSymbols(std::unique_ptr<Mapping> map) : m_map(std::move(map)) {}

  util::Result<bool> parse(const std::string& origin);
  void identify(const util::FileIdentity& id) { m_identity = id; }

  const std::vector<ElfUndefinedSymbol>& undefined() const override {
    if (!m_undefined_read) collect_undefined();
    return m_undefined;
  }
  const std::vector<ElfVersionNeed>& version_needs() const override { return m_needs; }
  bool defines(std::string_view name, std::uint32_t hash, std::string_view version) const override;
  bool defines_version(std::string_view version) const override {
    for (const auto& v : m_defined_versions)
      if (v == version) return true;
    return false;
  }

private:
  std::string_view str(std::uint64_t offset) const {
    if (offset >= m_strsz) return {};
    const char* begin = reinterpret_cast<const char*>(m_map->data() + m_stroff + offset);
    std::size_t max = m_strsz - offset;
    std::size_t len = strnlen(begin, max);
    return len == max ? std::string_view{} : std::string_view(begin, len);
  }
  // Whether symbol index i is a definition check_match accepts for (name, version).
  int accept(std::uint32_t i, std::string_view name, std::string_view version) const;
  void collect_undefined() const;
  std::string_view version_name(std::uint16_t index) const {
    return index < m_version_names.size() ? m_version_names[index] : std::string_view{};
  }

  std::unique_ptr<Mapping> m_map;
  const Elf64_Sym* m_syms = nullptr;
  std::uint64_t m_nsyms = 0;
  std::uint64_t m_stroff = 0, m_strsz = 0;
  const std::uint16_t* m_versym = nullptr;
  const std::uint32_t* m_gnu_hash = nullptr; // the whole .gnu.hash section
  std::uint64_t m_gnu_hash_words = 0;
  const std::uint32_t* m_sysv_hash = nullptr;
  std::uint64_t m_sysv_hash_words = 0;
  std::vector<std::string_view> m_version_names; // by version index: defined and needed versions
  std::vector<bool> m_version_is_needed;         // the index names a version this object needs
  std::vector<std::string_view> m_defined_versions;
  std::vector<std::string_view> m_needed_files; // by version index: the file it is needed of
  mutable std::vector<ElfUndefinedSymbol> m_undefined;
  mutable bool m_undefined_read = false;
  std::vector<ElfVersionNeed> m_needs;
};

util::Result<bool> MappedSymbols::parse(const std::string& origin) {
  auto fail = [&](const std::string& what) { return util::Error{util::ErrorKind::parse, origin + ": " + what}; };
  const auto* ehdr = m_map->at<Elf64_Ehdr>(0);
  if (!ehdr || std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0) return fail("not an ELF file");
  if (ehdr->e_ident[EI_CLASS] != ELFCLASS64 || ehdr->e_ident[EI_DATA] != ELFDATA2LSB) return fail("not a 64-bit little-endian ELF object");
  if (ehdr->e_shentsize != sizeof(Elf64_Shdr) || ehdr->e_shnum == 0) return fail("no section headers");
  const auto* shdrs = m_map->at<Elf64_Shdr>(ehdr->e_shoff, ehdr->e_shnum);
  if (!shdrs) return fail("section headers outside the file (truncated?)");
  Section dynsym, gnu_hash, sysv_hash, versym, verdef, verneed;
  for (unsigned i = 0; i < ehdr->e_shnum; ++i) {
    const Elf64_Shdr& s = shdrs[i];
    Section* slot = nullptr;
    switch (s.sh_type) {
    case SHT_DYNSYM: slot = &dynsym; break;
    case SHT_GNU_HASH: slot = &gnu_hash; break;
    case SHT_HASH: slot = &sysv_hash; break;
    case SHT_GNU_versym: slot = &versym; break;
    case SHT_GNU_verdef: slot = &verdef; break;
    case SHT_GNU_verneed: slot = &verneed; break;
    default: break;
    }
    if (slot && !slot->present) *slot = Section{s.sh_offset, s.sh_size, s.sh_link, s.sh_info, true};
  }
  if (!dynsym.present) return fail("no dynamic symbol table");
  if (dynsym.link >= ehdr->e_shnum) return fail("bad dynamic string table index");
  const Elf64_Shdr& strtab = shdrs[dynsym.link];
  if (!m_map->at<char>(strtab.sh_offset, strtab.sh_size)) return fail("dynamic string table outside the file");
  m_stroff = strtab.sh_offset;
  m_strsz = strtab.sh_size;
  m_nsyms = dynsym.size / sizeof(Elf64_Sym);
  m_syms = m_map->at<Elf64_Sym>(dynsym.offset, m_nsyms);
  if (!m_syms) return fail("dynamic symbol table outside the file");
  if (versym.present) {
    m_versym = m_map->at<std::uint16_t>(versym.offset, m_nsyms);
    if (!m_versym) return fail("symbol version table outside the file");
  }
  if (gnu_hash.present) {
    m_gnu_hash_words = gnu_hash.size / 4;
    m_gnu_hash = m_map->at<std::uint32_t>(gnu_hash.offset, m_gnu_hash_words);
    if (!m_gnu_hash || m_gnu_hash_words < 4) return fail("bad .gnu.hash");
  }
  if (sysv_hash.present) {
    m_sysv_hash_words = sysv_hash.size / 4;
    m_sysv_hash = m_map->at<std::uint32_t>(sysv_hash.offset, m_sysv_hash_words);
    if (!m_sysv_hash || m_sysv_hash_words < 2) return fail("bad .hash");
  }

  auto grow = [&](std::uint16_t index) {
    if (index >= m_version_names.size()) {
      m_version_names.resize(index + 1u);
      m_version_is_needed.resize(index + 1u, false);
      m_needed_files.resize(index + 1u);
    }
  };
  // Walks a verdef / verneed chain: at most `count` entries, each offset checked; a loop in the
  // `next` links ends at the count.
  if (verdef.present) {
    std::uint64_t off = verdef.offset, end = verdef.offset + verdef.size;
    for (std::uint32_t n = 0; n < verdef.info && off < end; ++n) {
      const auto* d = m_map->at<Elf64_Verdef>(off);
      if (!d) return fail("bad version definition");
      if (d->vd_cnt > 0) {
        const auto* a = m_map->at<Elf64_Verdaux>(off + d->vd_aux);
        if (!a) return fail("bad version definition name");
        std::uint16_t index = d->vd_ndx & 0x7fff;
        grow(index);
        m_version_names[index] = str(a->vda_name);
        if (!(d->vd_flags & VER_FLG_BASE)) m_defined_versions.push_back(str(a->vda_name));
      }
      if (d->vd_next == 0) break;
      off += d->vd_next;
    }
  }
  if (verneed.present) {
    std::uint64_t off = verneed.offset, end = verneed.offset + verneed.size;
    for (std::uint32_t n = 0; n < verneed.info && off < end; ++n) {
      const auto* need = m_map->at<Elf64_Verneed>(off);
      if (!need) return fail("bad version requirement");
      std::string_view file = str(need->vn_file);
      std::uint64_t aoff = off + need->vn_aux;
      for (std::uint16_t k = 0; k < need->vn_cnt; ++k) {
        const auto* a = m_map->at<Elf64_Vernaux>(aoff);
        if (!a) return fail("bad version requirement entry");
        std::uint16_t index = a->vna_other & 0x7fff;
        grow(index);
        m_version_names[index] = str(a->vna_name);
        m_version_is_needed[index] = true;
        m_needed_files[index] = file;
        m_needs.push_back({file, str(a->vna_name), (a->vna_flags & VER_FLG_WEAK) != 0});
        if (a->vna_next == 0) break;
        aoff += a->vna_next;
      }
      if (need->vn_next == 0) break;
      off += need->vn_next;
    }
  }

  return true;
}

// The dynamic symbol table is walked once, on demand, and whole: linkers put the unhashed entries
// first, but nothing in the format promises it.
void MappedSymbols::collect_undefined() const {
  m_undefined_read = true;
  for (std::uint64_t i = 1; i < m_nsyms; ++i) {
    const Elf64_Sym& s = m_syms[i];
    if (s.st_shndx != SHN_UNDEF || ELF64_ST_BIND(s.st_info) == STB_WEAK || ELF64_ST_BIND(s.st_info) == STB_LOCAL) continue;
    std::string_view name = str(s.st_name);
    if (name.empty()) continue;
    ElfUndefinedSymbol u{name, {}, {}, gnu_hash(name)};
    if (m_versym) {
      std::uint16_t index = m_versym[i] & 0x7fff;
      if (index >= 2 && index < m_version_names.size() && m_version_is_needed[index]) {
        u.version = m_version_names[index];
        u.version_file = m_needed_files[index];
      }
    }
    m_undefined.push_back(u);
  }
}

// 1: accepted; 0: not this symbol; 2: a versioned definition an unversioned reference may take
// only when it is the one such definition (glibc counts them: num_versions).
int MappedSymbols::accept(std::uint32_t i, std::string_view name, std::string_view version) const {
  if (i >= m_nsyms) return 0;
  const Elf64_Sym& s = m_syms[i];
  unsigned type = ELF64_ST_TYPE(s.st_info), bind = ELF64_ST_BIND(s.st_info);
  if (s.st_shndx == SHN_UNDEF) return 0;
  if (s.st_value == 0 && s.st_shndx != SHN_ABS && type != STT_TLS) return 0;
  if (type != STT_NOTYPE && type != STT_OBJECT && type != STT_FUNC && type != STT_COMMON && type != STT_TLS && type != STT_GNU_IFUNC)
    return 0;
  if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) return 0;
  // The name, compared in place: the bytes, then the terminator inside the string table.
  if (name.empty() || s.st_name >= m_strsz || m_strsz - s.st_name <= name.size()) return 0;
  const char* text = reinterpret_cast<const char*>(m_map->data() + m_stroff + s.st_name);
  if (std::memcmp(text, name.data(), name.size()) != 0 || text[name.size()] != '\0') return 0;
  if (!m_versym) return 1; // no version information: any reference takes it
  std::uint16_t raw = m_versym[i];
  std::uint16_t index = raw & 0x7fff;
  bool hidden = (raw & 0x8000) != 0;
  if (!version.empty()) {
    std::string_view defined =
        index >= 2 && index < m_version_names.size() && !m_version_is_needed[index] ? m_version_names[index] : std::string_view{};
    if (defined == version) return 1;
    // An unversioned definition (index 0/1) serves a versioned reference unless it is hidden.
    return defined.empty() && !hidden ? 1 : 0;
  }
  if (index >= 3) return hidden ? 0 : 2;
  return 1;
}

bool MappedSymbols::defines(std::string_view name, std::uint32_t hash, std::string_view version) const {
  int versioned = 0;
  auto consider = [&](std::uint32_t i) {
    int a = accept(i, name, version);
    if (a == 2) ++versioned;
    return a == 1;
  };
  if (m_gnu_hash) {
    const std::uint32_t* h = m_gnu_hash;
    std::uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], bloom_shift = h[3];
    // Header, bloom words (64-bit: two 32-bit words each), buckets, then the chain.
    std::uint64_t bloom_at = 4, buckets_at = bloom_at + 2ull * bloom_size, chain_at = buckets_at + nbuckets;
    if (nbuckets == 0 || bloom_size == 0 || chain_at > m_gnu_hash_words) return false;
    std::uint64_t word = bloom_at + 2ull * ((hash / 64) % bloom_size);
    std::uint64_t bloom = static_cast<std::uint64_t>(h[word]) | static_cast<std::uint64_t>(h[word + 1]) << 32;
    // ld.so shifts a 64-bit uint_fast32_t on x86-64, so a (malformed) shift of 32 or more leaves
    // 0 there; shifting the 32-bit hash that far would be undefined (found by fuzz_elf).
    std::uint32_t second = bloom_shift < 32 ? hash >> bloom_shift : 0;
    std::uint64_t mask = (1ull << (hash % 64)) | (1ull << (second % 64));
    if ((bloom & mask) != mask) return false;
    std::uint32_t i = h[buckets_at + hash % nbuckets];
    if (i < symoffset) return false;
    for (; i < m_nsyms && chain_at + (i - symoffset) < m_gnu_hash_words; ++i) {
      std::uint32_t chain = h[chain_at + (i - symoffset)];
      if ((chain | 1u) == (hash | 1u) && consider(i)) return true;
      if (chain & 1u) break;
    }
    return versioned == 1;
  }
  if (m_sysv_hash) {
    std::uint32_t nbucket = m_sysv_hash[0], nchain = m_sysv_hash[1];
    if (nbucket == 0 || 2ull + nbucket + nchain > m_sysv_hash_words) return false;
    std::uint32_t h = 0;
    for (unsigned char c : name) { // the SysV ELF hash
      h = (h << 4) + c;
      std::uint32_t g = h & 0xf0000000u;
      if (g) h ^= g >> 24;
      h &= ~g;
    }
    std::uint32_t steps = 0;
    for (std::uint32_t i = m_sysv_hash[2 + h % nbucket]; i != 0 && i < nchain && steps++ < nchain; i = m_sysv_hash[2 + nbucket + i]) {
      if (consider(i)) return true;
    }
    return versioned == 1;
  }
  for (std::uint32_t i = 1; i < m_nsyms; ++i) {
    if (consider(i)) return true;
  }
  return versioned == 1;
}

util::Result<std::shared_ptr<const ElfSymbols>> read_uncached(const NodeFile& file) {
  const std::filesystem::path host_file = file.host();
  util::Fd fd = NVTE_TRY(open_node_file(file));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return util::file_error("cannot stat", host_file, errno);
  if (st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr)))
    return util::Error{util::ErrorKind::parse, host_file.string() + ": too short for ELF"};
  void* data = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) {
    int err = errno;
    return util::Error{util::errno_kind(err), "cannot map " + host_file.string() + ": " + util::errno_text(err)};
  }
  auto symbols = std::make_shared<MappedSymbols>(std::make_unique<Mapping>(data, static_cast<std::size_t>(st.st_size)));
  symbols->identify(util::file_identity(st));
  auto parsed = symbols->parse(host_file.string());
  if (!parsed) return parsed.error();
  return std::shared_ptr<const ElfSymbols>(std::move(symbols));
}

} // namespace

util::Result<std::shared_ptr<const ElfSymbols>> read_elf_symbols(const NodeFile& file) {
  using Cached = util::Result<std::shared_ptr<const ElfSymbols>>;
  auto value = node_memo_value("elf_symbols", file.host().string(), [&] { return std::make_shared<const Cached>(read_uncached(file)); });
  return *std::static_pointer_cast<const Cached>(value);
}

} // namespace probe
