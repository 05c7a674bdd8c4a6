// A file's compiled form as bytes and back. Each type is described once, by an io() that lists
// its fields in order; the FormWriter runs it over a compiled file (reading the fields) and the
// FormReader over a fresh one (filling them), so the two directions cannot disagree on the layout.
// Integers are LEB128 varints (signed ones zigzagged), strings and lists carry their length.
// Versions and version ranges are stored as their text and parsed again, which the writer checks
// gives the same value. The file's display name is never stored: where compiling sets a string
// to it (a rule's file, every Location, a package's file and its "name:line" in the registry)
// the writer checks that it is that and the reader puts the name of the file it loads there.
#include "rules/compiled_form.hpp"
#include "util/varint.hpp"

#include <bit>
#include <concepts>
#include <map>
#include <type_traits>

namespace rules::detail {

namespace {

// The first bytes of every stored form; another layout gets another word.
constexpr std::string_view k_magic = "nvte-rules-compiled-1";

class FormWriter {
public:
  static constexpr bool k_reading = false;
  explicit FormWriter(const SourceFile& file) : m_file(file) {}

  bool ok() const { return m_ok; }
  std::string take() { return std::move(m_out); }
  void fail() { m_ok = false; }

  void number(std::uint64_t v) { util::append_varint(m_out, v); }
  template <class T>
  void scalar(const T& v) {
    if constexpr (std::is_enum_v<T>) {
      scalar(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (std::is_signed_v<T>) {
      auto u = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
      number((u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0));
    } else {
      number(static_cast<std::uint64_t>(v));
    }
  }
  void real(const double& d) { number(std::bit_cast<std::uint64_t>(d)); }
  void text(std::string_view s) {
    number(s.size());
    m_out.append(s);
  }
  // A string compiling set to the file's display name.
  void file_name(const std::string& s) {
    if (s != m_file.name) fail();
  }
  // "NAME:LINE", NAME the display name: LINE is stored.
  void file_place(const std::string& s) {
    if (s.size() <= m_file.name.size() || !s.starts_with(m_file.name) || s[m_file.name.size()] != ':') return fail();
    text(std::string_view(s).substr(m_file.name.size() + 1));
  }
  std::size_t count(std::size_t n) {
    number(n);
    return n;
  }
  bool flag(bool b) {
    scalar(b);
    return b;
  }

private:
  const SourceFile& m_file;
  std::string m_out;
  bool m_ok = true;
};

class FormReader {
public:
  static constexpr bool k_reading = true;
  FormReader(std::string_view bytes, const SourceFile& file) : m_bytes(bytes), m_file(file) {}

  // Every byte read, none past the end.
  bool ok() const { return m_ok && m_at == m_bytes.size(); }
  void fail() {
    m_ok = false;
    m_at = m_bytes.size(); // what follows reads zeros and empty strings
  }

  std::uint64_t number() {
    if (auto v = util::read_varint(m_bytes, m_at)) return *v;
    fail();
    return 0;
  }
  template <class T>
  void scalar(T& v) {
    if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> u{};
      scalar(u);
      v = static_cast<T>(u);
    } else if constexpr (std::is_same_v<T, bool>) {
      v = number() != 0;
    } else if constexpr (std::is_signed_v<T>) {
      std::uint64_t u = number();
      v = static_cast<T>(static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1)));
    } else {
      v = static_cast<T>(number());
    }
  }
  void real(double& d) { d = std::bit_cast<double>(number()); }
  void text(std::string& s) {
    std::size_t n = count(0);
    s = std::string(m_bytes.data() + m_at, n); // constructed at its size: assign() grows an empty string
    m_at += n;
  }
  void file_name(std::string& s) { s = m_file.name; }
  void file_place(std::string& s) {
    std::string line;
    text(line);
    s.reserve(m_file.name.size() + 1 + line.size());
    s = m_file.name;
    s += ':';
    s += line;
  }
  // A length: never more than the bytes left (every element takes at least one).
  std::size_t count(std::size_t) {
    std::uint64_t n = number();
    if (n > m_bytes.size() - m_at) {
      fail();
      return 0;
    }
    return static_cast<std::size_t>(n);
  }
  bool flag(bool) { return number() != 0; }

private:
  std::string_view m_bytes;
  std::size_t m_at = 0;
  const SourceFile& m_file;
  bool m_ok = true;
};

// ---- what each type is made of ------------------------------------------------------------------

// U is T or const T: the writer describes const objects, the reader fills others.
template <class U, class T>
concept Is = std::same_as<std::remove_const_t<U>, T>;

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

template <class U>
concept Integer = std::is_integral_v<std::remove_const_t<U>> || std::is_enum_v<std::remove_const_t<U>>;
template <class U>
concept Vector = IsVector<std::remove_const_t<U>>::value;
template <class U>
concept Optional = IsOptional<std::remove_const_t<U>>::value;
template <class U>
concept Pair = IsPair<std::remove_const_t<U>>::value;

template <class Io, Integer T>
void io(Io& s, T& v) {
  s.scalar(v);
}
template <class Io, Is<double> T>
void io(Io& s, T& v) {
  s.real(v);
}
template <class Io, Is<std::string> T>
void io(Io& s, T& v) {
  s.text(v);
}
template <class Io, Vector V>
void io(Io& s, V& v) {
  std::size_t n = s.count(v.size());
  if constexpr (Io::k_reading) v.resize(n);
  for (auto& item : v) io(s, item);
}
template <class Io, Optional O>
void io(Io& s, O& o) {
  if (!s.flag(o.has_value())) return;
  if constexpr (Io::k_reading) o.emplace();
  io(s, *o);
}
template <class Io, Pair P>
void io(Io& s, P& p) {
  io(s, p.first);
  io(s, p.second);
}
template <class Io, class... T>
void fields(Io& s, T&... v) {
  (io(s, v), ...);
}

bool same_version(const model::Version& a, const model::Version& b) {
  return a == b && a.components() == b.components() && a.text() == b.text() && a.local() == b.local() &&
         a.is_prerelease() == b.is_prerelease();
}

template <class Io, Is<model::Version> V>
void io(Io& s, V& v) {
  if constexpr (Io::k_reading) {
    std::string text;
    s.text(text);
    auto parsed = model::Version::parse(text);
    if (!parsed) return s.fail();
    v = std::move(*parsed);
  } else {
    s.text(v.text());
    auto back = model::Version::parse(v.text());
    if (!back || !same_version(*back, v)) s.fail();
  }
}
template <class Io, Is<model::VersionRange> R>
void io(Io& s, R& r) {
  if constexpr (Io::k_reading) {
    std::string text;
    s.text(text);
    auto parsed = model::VersionRange::parse(text);
    if (!parsed) return s.fail();
    r = std::move(*parsed);
  } else {
    s.text(r.text());
    auto back = model::VersionRange::parse(r.text());
    if (!back || back->text() != r.text()) s.fail();
  }
}

template <class Io, Is<model::Value> V>
void io(Io& s, V& v) {
  using model::ValueType;
  if constexpr (Io::k_reading) {
    ValueType type{};
    s.scalar(type);
    switch (type) {
    case ValueType::boolean: {
      bool b = false;
      s.scalar(b);
      v = model::Value(b);
      return;
    }
    case ValueType::integer: {
      std::int64_t i = 0;
      s.scalar(i);
      v = model::Value(static_cast<long long>(i));
      return;
    }
    case ValueType::number: {
      double d = 0;
      s.real(d);
      v = model::Value(d);
      return;
    }
    case ValueType::string: {
      std::string text;
      s.text(text);
      v = model::Value(std::move(text));
      return;
    }
    case ValueType::version: {
      model::Version version;
      io(s, version);
      v = model::Value(std::move(version));
      return;
    }
    }
    s.fail();
  } else {
    s.scalar(v.type());
    switch (v.type()) {
    case ValueType::boolean: s.scalar(v.as_bool()); break;
    case ValueType::integer: s.scalar(v.as_int()); break;
    case ValueType::number: s.real(v.as_double()); break;
    case ValueType::string: s.text(v.as_string()); break;
    case ValueType::version: io(s, v.as_version()); break;
    }
  }
}

template <class Io, Is<SlotSpec> T>
void io(Io& s, T& v) {
  fields(s, v.name, v.collection, v.field, v.type);
}
template <class Io, Is<SlotTable> T>
void io(Io& s, T& table) {
  if constexpr (Io::k_reading) {
    std::vector<SlotSpec> slots;
    std::vector<std::string> collections;
    fields(s, slots, collections);
    table = SlotTable::of(std::move(slots), std::move(collections));
  } else {
    fields(s, table.slots(), table.collections());
  }
}

template <class Io, Is<Operand> T>
void io(Io& s, T& v) {
  fields(s, v.kind, v.index, v.literal);
}
template <class Io, Is<Arithmetic> T>
void io(Io& s, T& v) {
  fields(s, v.op, v.lhs, v.rhs);
}
// Qualified: in a unity batch loader.cpp's file-local Node (the YAML node) is in scope.
template <class Io, Is<rules::detail::Node> T>
void io(Io& s, T& v) {
  fields(s, v.kind, v.op, v.flag, v.lhs, v.rhs, v.list, v.range, v.children);
}
template <class Io, Is<Condition> T>
void io(Io& s, T& v) {
  fields(s, v.nodes, v.arithmetic, v.root, v.collection, v.slots, v.reads_workload, v.reads_explain);
}

template <class Io, Is<Segment> T>
void io(Io& s, T& v) {
  fields(s, v.kind, v.text, v.collection, v.field, v.args);
}
template <class Io, Is<Template> T>
void io(Io& s, T& v) {
  fields(s, v.segments, v.reads_workload, v.reads_explain, v.collections);
}
template <class Io, Is<CompiledFix> T>
void io(Io& s, T& v) {
  fields(s, v.kind, v.command, v.description);
}
template <class Io, Is<AppliesTo> T>
void io(Io& s, T& v) {
  fields(s, v.key, v.slot, v.range);
}
template <class Io, Is<Location> T>
void io(Io& s, T& v) {
  s.file_name(v.file);
  fields(s, v.line, v.column, v.source_line);
}

template <class Io, Is<model::FixOutcome> T>
void io(Io& s, T& v) {
  fields(s, v.backend, v.sub_backend, v.clears);
}
template <class Io, Is<model::Fix> T>
void io(Io& s, T& v) {
  fields(s, v.kind, v.command, v.description, v.changes, v.verified, v.unverified_reason, v.refuted);
}
template <class Io, Is<RuleSummary> T>
void io(Io& s, T& v) {
  fields(s, v.id, v.title, v.severity, v.impact, v.verdict, v.verdict_backends, v.explains, v.area);
  s.file_name(v.file);
  fields(s, v.line, v.when, v.backend, v.effect, v.kind, v.applies_to, v.message, v.fixes, v.references, v.tags, v.fires_cases,
         v.quiet_cases);
}
template <class Io, Is<Rule> T>
void io(Io& s, T& v) {
  fields(s, v.kind, v.deprioritized, v.when, v.applies_to, v.backend, v.sub_backend, v.while_backend, v.while_sub, v.summary, v.message,
         v.fixes, v.at, v.reference_at);
  // Compiled test cases (TestCases::compile) are not stored: such a load compiles the file.
  if constexpr (!Io::k_reading)
    if (!v.tests.empty()) s.fail();
}

template <class Io, Is<SelectionOrder> T>
void io(Io& s, T& v) {
  fields(s, v.te, v.backends, v.fused_sub_backends, v.flash_sub_backends);
}
template <class Io, Is<Selection> T>
void io(Io& s, T& v) {
  fields(s, v.default_te_version, v.orders, v.newest_te_modelled, v.modelled_sms);
}

template <class Io, Is<PackageRequirement> T>
void io(Io& s, T& v) {
  fields(s, v.text, v.name, v.range);
}
template <class Io, Is<DriverFloor> T>
void io(Io& s, T& v) {
  fields(s, v.cuda_major, v.min_sm, v.version);
}
template <class Io, Is<PackageRelease> T>
void io(Io& s, T& v) {
  fields(s, v.version, v.cuda_majors, v.python, v.torch, v.prebuilt, v.prebuilt_torch, v.prebuilt_python, v.glibc, v.driver, v.requirements,
         v.build_note, v.source, v.line);
}
template <class Io, Is<Package> T>
void io(Io& s, T& v) {
  fields(s, v.name, v.fact, v.library, v.requirement, v.pip_flags, v.on_index, v.note);
  s.file_name(v.file);
  fields(s, v.line, v.releases);
}

template <class Io, Is<Registry> T>
void io(Io& s, T& v) {
  std::size_t n = s.count(v.ids.size());
  if constexpr (Io::k_reading) {
    for (std::size_t i = 0; i < n; ++i) {
      std::pair<std::string, Location> entry;
      io(s, entry);
      v.ids.insert(v.ids.end(), std::move(entry));
    }
  } else {
    for (const auto& entry : v.ids) io(s, entry);
  }
  io(s, v.selection_at);
  n = s.count(v.packages.size());
  if constexpr (Io::k_reading) {
    for (std::size_t i = 0; i < n; ++i) {
      std::pair<std::string, std::string> entry;
      io(s, entry.first);
      s.file_place(entry.second);
      v.packages.insert(v.packages.end(), std::move(entry));
    }
  } else {
    for (const auto& [name, place] : v.packages) {
      io(s, name);
      s.file_place(place);
    }
  }
}

// A file's part of the database: what merging it takes (database_load.cpp). Its id, rule index
// and digest belong to the whole database, made after the merge.
template <class Io, Is<RuleSet::Impl> T>
void io(Io& s, T& v) {
  fields(s, v.slots, v.rules, v.catalog.packages, v.selection, v.default_te_version);
}

// A field added to one of these types must be added to its io() above, or the stored form would
// leave it out and a shipped file would load without it (the tests compare the stored form with
// compiling, which a field that neither direction knows passes). These are the sizes of the types
// io() describes, on x86-64 with libstdc++: a new field stops the build here.
#if defined(__x86_64__) && defined(__GLIBCXX__) && !defined(_GLIBCXX_DEBUG)
static_assert(sizeof(Rule) == 920 && sizeof(RuleSummary) == 472 && sizeof(Location) == 72 && sizeof(AppliesTo) == 96,
              "a field of Rule, RuleSummary, Location or AppliesTo is not in the stored form: add it to io() in compiled_form.cpp");
static_assert(sizeof(Condition) == 88 && sizeof(rules::detail::Node) == 360 && sizeof(Operand) == 120 && sizeof(Arithmetic) == 248,
              "a field of a condition is not in the stored form: add it to io() in compiled_form.cpp");
static_assert(sizeof(Template) == 56 && sizeof(Segment) == 104 && sizeof(CompiledFix) == 120 && sizeof(SlotSpec) == 80 &&
                  sizeof(SlotTable) == 144,
              "a field of a template or the slot table is not in the stored form: add it to io() in compiled_form.cpp");
static_assert(sizeof(model::Fix) == 264 && sizeof(model::FixOutcome) == 96,
              "a field of model::Fix is not in the stored form: add it to io() in compiled_form.cpp");
static_assert(sizeof(Selection) == 112 && sizeof(SelectionOrder) == 136 && sizeof(Package) == 256 && sizeof(PackageRelease) == 624 &&
                  sizeof(PackageRequirement) == 128 && sizeof(DriverFloor) == 120 && sizeof(Registry) == 176 && sizeof(Catalog) == 24,
              "a field of the selection, the catalog or the registry is not in the stored form: add it to io() in compiled_form.cpp");
static_assert(sizeof(RuleSet::Impl) == 512 && sizeof(FilePart) == 720,
              "a field of the database or of a file's part is not in the stored form: add it to io() in compiled_form.cpp");
#endif

} // namespace

std::string encode_compiled(const SourceFile& file, const FilePart& part) {
  if (!part.diagnostics.empty()) return {};
  FormWriter out(file);
  out.text(k_magic);
  io(out, part.impl);
  io(out, part.registry);
  return out.ok() ? out.take() : std::string();
}

bool decode_compiled(std::string_view bytes, const SourceFile& file, FilePart& part) {
  FormReader in(bytes, file);
  std::string magic;
  in.text(magic);
  if (magic != k_magic) in.fail();
  else {
    io(in, part.impl);
    io(in, part.registry);
  }
  if (in.ok()) return true;
  // As fresh as it came: the caller compiles the file into it.
  part.impl.slots = SlotTable();
  part.impl.rules.clear();
  part.impl.catalog.packages.clear();
  part.impl.selection = Selection();
  part.impl.default_te_version.reset();
  part.registry = Registry();
  return false;
}

} // namespace rules::detail
