// The native probe: link-time truth for the native code an interpreter on the node imports, the
// way the dynamic loader would link it, without starting Python or loading anything
// (link_map.hpp). The process is modelled in import order:
//   1. the interpreter executable and its NEEDED tree (the global scope; it exports the C API
//      every extension module calls);
//   2. `import torch`: torch/lib/libtorch_global_deps.so with RTLD_GLOBAL (torch/__init__.py
//      _load_global_deps), then torch/_C*.so with RTLD_LOCAL and its tree — libtorch_python,
//      libtorch, libtorch_cpu, libtorch_cuda, libc10, the nvidia wheels (unit "torch");
//   3. `import transformer_engine`: the cuDNN / NVRTC copies TE picks and libtransformer_engine.so,
//      each with RTLD_GLOBAL (transformer_engine/common/__init__.py), then the other TE shared
//      objects and the PyTorch extension transformer_engine_torch*.so (RTLD_LOCAL);
//   4. flash-attn 2 / 3 and apex: every .so their RECORD lists (flash_attn_2_cuda*.so,
//      flash_attn_3/_C*.so, ...), each RTLD_LOCAL after torch. flash-attn 4 is Python only.
// Runs only when TE or flash-attn is installed (the budget of docs/records/performance.md).
//
// Facts, per checked object (native.extensions[i].*, see model/fact_catalog.cpp): the symbols
// none of its scope defines, sorted by who should define them — torch's libraries (a build for
// another torch), cuBLASLt (a libcublasLt older than the one it was built with), other — the
// libraries the search does not find, the versions a loaded file lacks, and the torch a build was
// made for where its files say it (built_for_torch).
#include "probe/dist_info.hpp"
#include "probe/interpreters.hpp"
#include "probe/link_map.hpp"
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"
#include "probe/te_load_order.hpp"
#include "util/file.hpp"
#include "util/logging.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <future>
#include <set>

namespace probe {

namespace {

constexpr std::size_t k_named_symbols = 5; // how many unresolved symbols a fact names

struct Unit {
  std::string package; // te, flash_attn, flash_attn_3, apex, torch
  std::string path;    // node path
  bool global = false; // RTLD_GLOBAL
  const Distribution* dist = nullptr;
};

// Which library should define an unresolved symbol: torch's (by C++ namespace), cuBLASLt's (by
// name or the version it asks for), or another.
enum class Owner { torch, cublaslt, other };

bool has_namespace(std::string_view demangled, std::string_view ns) {
  for (std::size_t at = demangled.find(ns); at != std::string_view::npos; at = demangled.find(ns, at + 1)) {
    if (at == 0) return true;
    char before = demangled[at - 1];
    if (before == ' ' || before == '<' || before == '(' || before == ',' || before == '&' || before == '*') return true;
  }
  return false;
}

Owner owner_of(const UnresolvedSymbol& s) {
  if (util::starts_with(s.mangled, "cublasLt") || util::starts_with(s.version_file, "libcublasLt")) return Owner::cublaslt;
  for (auto ns : {"c10::", "at::", "torch::", "caffe2::"}) {
    if (has_namespace(s.demangled, ns)) return Owner::torch;
  }
  if (util::starts_with(s.mangled, "THP")) return Owner::torch;
  return Owner::other;
}

// The torch library that should define a torch symbol, among those the object's scope holds.
std::string torch_library(const LinkMap& map, const LinkResult& r, const UnresolvedSymbol& s) {
  std::vector<std::string> wanted;
  if (has_namespace(s.demangled, "c10::cuda::")) wanted = {"libc10_cuda.so"};
  else if (has_namespace(s.demangled, "c10::")) wanted = {"libc10.so"};
  else if (util::starts_with(s.mangled, "THP") || has_namespace(s.demangled, "torch::python::")) wanted = {"libtorch_python.so"};
  else if (has_namespace(s.demangled, "at::cuda::")) wanted = {"libtorch_cuda.so"};
  else wanted = {"libtorch_cpu.so", "libtorch.so"};
  for (const auto& name : wanted) {
    for (std::size_t i : r.scope)
      if (map.objects()[i].soname == name) return name;
  }
  return wanted.front();
}

// "2.6" from a wheel file name or a version's local label ("cu12torch2.6cxx11abiFALSE"): the
// first "torch" followed by MAJOR.MINOR[.PATCH]. (A std::regex for this cost 2 ms of every probe
// with TE installed: compiling it is 8 M instructions.)
std::optional<std::string> torch_in(std::string_view text) {
  auto digits = [&](std::size_t at) {
    std::size_t end = at;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    return end;
  };
  for (std::size_t at = text.find("torch"); at != std::string_view::npos; at = text.find("torch", at + 1)) {
    std::size_t begin = at + 5, end = digits(begin);
    if (end == begin || end >= text.size() || text[end] != '.') continue;
    std::size_t minor = digits(end + 1);
    if (minor == end + 1) continue;
    end = minor;
    if (end < text.size() && text[end] == '.') {
      std::size_t patch = digits(end + 1);
      if (patch > end + 1) end = patch;
    }
    return std::string(text.substr(begin, end - begin));
  }
  return std::nullopt;
}

struct BuiltFor {
  std::string version;
  std::string source;
};

// The torch a build was made for, where its distribution's files say it: a version local label
// (flash_attn 2.7.4.post1+cu12torch2.6cxx11abiFALSE), the wheel file name in direct_url.json
// (pip install <release URL>), or an exact Requires-Dist pin on torch.
std::optional<BuiltFor> built_for_torch(const std::filesystem::path& root, const Distribution& dist) {
  if (auto plus = dist.version.find('+'); plus != std::string::npos) {
    if (auto v = torch_in(std::string_view(dist.version).substr(plus))) return BuiltFor{*v, "version " + dist.version};
  }
  if (auto text = read_node_file(root, dist.metadata_path + "/direct_url.json", 1u << 16)) {
    auto url = text->find("\"url\"");
    if (url != std::string::npos) {
      auto open = text->find('"', text->find(':', url));
      auto close = open == std::string::npos ? std::string::npos : text->find('"', open + 1);
      if (close != std::string::npos) {
        std::string value = text->substr(open + 1, close - open - 1);
        if (auto v = torch_in(util::path_file_name(value))) return BuiltFor{*v, "direct_url.json " + util::path_file_name(value)};
      }
    }
  }
  for (const auto& text : dist.requires_dist) {
    auto r = parse_requirement(text);
    if (!r || r->normalized != "torch" || !r->marker.empty() || !util::starts_with(r->specifier, "==")) continue;
    return BuiltFor{r->specifier.substr(2), "Requires-Dist " + text};
  }
  return std::nullopt;
}

// The pip distribution to upgrade for a libcublasLt copy: the wheel whose RECORD lists it, else
// the one of its CUDA major (CUDA 13's wheel dropped the -cu suffix).
std::string cublas_distribution(const Host& host, const std::vector<std::string>& sites, const LinkedObject* lt) {
  if (lt) {
    for (const auto& site : sites) {
      for (const auto& dist : scan_site_packages(host.root, site, "nvidia_cublas").distributions) {
        auto files = read_record(host.root, dist);
        if (!files) continue;
        for (const auto& f : *files) {
          auto real = resolve_node_path(host.root, f);
          if (real && real->real.string() == lt->real) return dist.name;
        }
      }
    }
  }
  std::string soname = lt ? lt->soname : std::string{};
  if (util::ends_with(soname, ".so.13")) return "nvidia-cublas";
  if (util::ends_with(soname, ".so.11")) return "nvidia-cublas-cu11";
  return "nvidia-cublas-cu12";
}

std::string join_first(const std::vector<std::string>& items, std::size_t n, std::string_view sep) {
  std::vector<std::string> head(items.begin(), items.begin() + static_cast<long>(std::min(n, items.size())));
  std::string out = util::join(head, sep);
  if (items.size() > n) out += std::string(sep) + "… (" + std::to_string(items.size() - n) + " more)";
  return out;
}

void record_unit(const Host& host, const std::vector<std::string>& sites, const LinkMap& map, const Unit& unit, const LinkResult& r,
                 model::Facts& facts, std::size_t index) {
  std::string base = "native.extensions[" + std::to_string(index) + "]";
  facts.set(base + ".package", unit.package);
  facts.set(base + ".path", unit.path);
  facts.set(base + ".file", util::path_file_name(unit.path));
  if (unit.dist) {
    facts.set(base + ".distribution", unit.dist->name);
    facts.set(base + ".distribution_version", unit.dist->version);
    if (auto built = built_for_torch(host.root, *unit.dist)) {
      facts.set(base + ".built_for_torch", built->version);
      facts.set(base + ".built_for_torch_source", built->source);
    }
  }
  std::vector<std::string> all, by_owner[3];
  std::string library[3];
  for (const auto& s : r.unresolved) {
    std::string text = s.demangled + (s.version.empty() ? "" : " (version " + s.version + ")");
    if (s.needed_by != util::path_file_name(unit.path)) text += " [needed by " + s.needed_by + "]";
    all.push_back(text);
    Owner o = owner_of(s);
    auto& list = by_owner[static_cast<int>(o)];
    if (list.empty()) {
      if (o == Owner::torch) library[0] = torch_library(map, r, s);
      else if (o == Owner::cublaslt) {
        const LinkedObject* lt = map.find(s.version_file.empty() ? "libcublasLt.so" : s.version_file);
        if (!lt) {
          for (std::size_t i : r.scope)
            if (util::starts_with(map.objects()[i].soname, "libcublasLt.so")) lt = &map.objects()[i];
        }
        library[1] = lt ? lt->real : (s.version_file.empty() ? std::string("libcublasLt") : s.version_file);
        facts.set(base + ".cublas_distribution", cublas_distribution(host, sites, lt));
      } else {
        library[2] = s.version_file;
      }
      facts.set(base + (o == Owner::torch ? ".torch_symbol" : o == Owner::cublaslt ? ".cublaslt_symbol" : ".other_symbol"), s.demangled);
    }
    list.push_back(s.demangled);
  }
  facts.set(base + ".unresolved_count", static_cast<long>(all.size()));
  if (!all.empty()) {
    facts.set(base + ".unresolved", join_first(all, k_named_symbols, "; "));
    facts.set(base + ".first_symbol_mangled", r.unresolved.front().mangled);
  }
  const char* names[3] = {"torch", "cublaslt", "other"};
  for (int o = 0; o < 3; ++o) {
    facts.set(base + "." + names[o] + "_symbol_count", static_cast<long>(by_owner[o].size()));
    if (!library[o].empty()) facts.set(base + "." + names[o] + "_library", library[o]);
  }
  std::vector<std::string> missing;
  for (const auto& m : r.missing) missing.push_back(m.name + " (needed by " + m.needed_by + ")");
  facts.set(base + ".missing_library_count", static_cast<long>(r.missing.size()));
  if (!missing.empty()) {
    facts.set(base + ".missing_libraries", join_first(missing, k_named_symbols, "; "));
    facts.set(base + ".missing_library", r.missing.front().name);
  }
  facts.set(base + ".missing_version_count", static_cast<long>(r.missing_versions.size()));
  if (!r.missing_versions.empty()) facts.set(base + ".missing_versions", join_first(r.missing_versions, k_named_symbols, "; "));
  facts.set(base + ".links", all.empty() && r.missing.empty() && r.missing_versions.empty());
}

// Distributions of interest on the interpreter's sys.path, the first of each name.
std::vector<Distribution> find_distributions(const Host& host, const std::vector<std::string>& sites) {
  auto wanted = [](const std::string& n) {
    return n == "torch" || n == "flash_attn" || n == "flash_attn_3" || n == "flashattn_hopper" || n == "apex" ||
           util::starts_with(n, "transformer_engine");
  };
  std::vector<Distribution> out;
  std::set<std::string> seen;
  for (const auto& site : sites) {
    for (auto& d : scan_site_packages(host.root, site, {}, wanted).distributions) {
      if (seen.insert(d.normalized).second) out.push_back(std::move(d));
    }
  }
  return out;
}

const Distribution* find_dist(const std::vector<Distribution>& dists, std::string_view prefix) {
  for (const auto& d : dists)
    if (util::starts_with(d.normalized, prefix)) return &d;
  return nullptr;
}

// The extension modules a distribution's RECORD lists.
std::vector<std::string> record_objects(const Host& host, const Distribution& dist) {
  std::vector<std::string> out;
  auto files = read_record(host.root, dist);
  if (!files) return out;
  for (const auto& f : *files) {
    if (util::ends_with(f, ".so") && node_file_type(host.root, f) == NodeFileType::regular) out.push_back(f);
  }
  return out;
}

// One run of the probe, in two parts: torch's link needs only the python probe's facts and is the
// slow part (a 40-object tree with tens of thousands of references), so it can run on a thread of
// its own while the libraries probe runs; TE's part needs the cuDNN and NVRTC copies the libraries
// probe found TE loads. The state lives on the heap: units point at dists, the map at the cache.
struct NativeRun {
  bool skip = false; // neither TE nor flash-attn: nothing is linked
  bool has_te = false;
  std::optional<std::string> executable, torch_path;
  std::vector<std::string> sites;
  std::vector<Distribution> dists;
  std::shared_ptr<const LdCache> cache;
  std::unique_ptr<LinkMap> map;
  bool interpreter_read = false;
  std::vector<std::string> problems;
  std::vector<Unit> units;                                 // torch's first, then TE's, flash-attn's, apex's
  std::vector<std::pair<std::size_t, LinkResult>> results; // by index into units, in link order
  std::vector<std::string> denied;                         // what the torch thread's memo could not read
};

std::unique_ptr<NativeRun> prepare(const Host& host, const model::Facts& facts) {
  auto run = std::make_unique<NativeRun>();
  run->has_te = facts.has("te.version");
  bool has_fa = facts.has("flash_attn.version") || facts.has("flash_attn_3.version");
  run->skip = !run->has_te && !has_fa;
  if (run->skip) return run;
  run->executable = facts.get_string("python.executable");
  run->torch_path = facts.get_string("torch.path");
  InterpreterScan scan = find_interpreters(host);
  for (const auto& it : scan.interpreters) {
    if (run->executable && it.path == *run->executable) run->sites = it.package_dirs();
  }
  return run;
}

// The interpreter and `import torch`: distributions, the map, torch's units linked.
void link_torch(const Host& host, NativeRun& run) {
  util::log::Laps laps("native probe");
  run.dists = find_distributions(host, run.sites);
  laps.lap("distributions");
  run.cache = shared_ld_cache(host.root);
  run.map = std::make_unique<LinkMap>(make_loader_view(host, run.cache.get()));
  // Without a readable interpreter the C API's definitions are unknown: Py* references are then
  // not reported (a fixture tree, or an interpreter the probe cannot read).
  if (run.executable) {
    auto r = run.map->open(*run.executable, true, false);
    run.interpreter_read = r.opened;
    if (!r.opened) run.problems.push_back("interpreter " + *run.executable + ": " + r.error);
  }
  if (run.torch_path) {
    const std::string& torch = *run.torch_path;
    const Distribution* torch_dist = find_dist(run.dists, "torch");
    std::string lib = torch + "/lib";
    if (node_file_type(host.root, lib + "/libtorch_global_deps.so") == NodeFileType::regular)
      run.units.push_back({"torch", lib + "/libtorch_global_deps.so", true, torch_dist});
    bool c_module = false;
    for (const auto& name : node_list_directory(host.root, torch)) {
      if (util::starts_with(name, "_C.") && util::ends_with(name, ".so")) {
        run.units.push_back({"torch", torch + "/" + name, false, torch_dist});
        c_module = true;
      }
    }
    // A tree without torch's Python module: its libraries, dependencies first.
    if (!c_module) {
      for (auto name : {"libc10.so", "libc10_cuda.so", "libtorch_cpu.so", "libtorch.so", "libtorch_cuda.so", "libtorch_python.so"}) {
        if (node_file_type(host.root, lib + "/" + name) == NodeFileType::regular)
          run.units.push_back({"torch", lib + "/" + name, false, torch_dist});
      }
    }
  }
  for (std::size_t i = 0; i < run.units.size(); ++i) {
    run.results.emplace_back(i, run.map->open(run.units[i].path, run.units[i].global, true));
    laps.lap(util::path_file_name(run.units[i].path));
  }
}

// `import transformer_engine` (the cuDNN / NVRTC copies TE picks, each RTLD_GLOBAL, then its
// objects) and the flash-attn / apex extensions, after torch; then every unit's facts.
void link_rest_and_record(const Host& host, NativeRun& run, model::Facts& facts) {
  util::log::Laps laps("native probe");
  LinkMap& map = *run.map;
  std::size_t first = run.units.size();
  if (run.has_te) {
    const Distribution* te_dist = find_dist(run.dists, "transformer_engine");
    for (const char* lib : {"te.cudnn.path", "te.nvrtc.path"}) {
      if (auto p = facts.get_string(lib)) map.open(*p, true, false);
    }
    std::set<std::string> te_files;
    if (auto core = facts.get_string("te.core_library.path")) {
      run.units.push_back({"te", *core, true, te_dist});
      te_files.insert(*core);
    }
    if (auto te_dir = facts.get_string("te.path")) {
      for (const auto& dir : {*te_dir, *te_dir + "/wheel_lib"}) {
        for (const auto& name : node_list_directory(host.root, dir)) {
          std::string path = dir + "/" + name;
          if (!util::ends_with(name, ".so") || name.find("jax") != std::string::npos || te_files.count(path)) continue;
          if (node_file_type(host.root, path) != NodeFileType::regular) continue;
          run.units.push_back({"te", path, false, te_dist});
          te_files.insert(path);
        }
      }
    }
    if (auto ext = facts.get_string("te.torch_extension.path"); ext && !te_files.count(*ext)) {
      const Distribution* torch_dist = find_dist(run.dists, "transformer_engine_torch");
      run.units.push_back({"te", *ext, false, torch_dist ? torch_dist : te_dist});
    }
  }
  for (auto [prefix, package] : {std::pair{"flash_attn_3", "flash_attn_3"}, std::pair{"flashattn_hopper", "flash_attn_3"},
                                 std::pair{"flash_attn", "flash_attn"}, std::pair{"apex", "apex"}}) {
    for (const auto& d : run.dists) {
      if (d.normalized != prefix) continue;
      for (const auto& path : record_objects(host, d)) run.units.push_back({package, path, false, &d});
    }
  }
  laps.lap("units (" + std::to_string(run.units.size()) + ")");
  for (std::size_t i = first; i < run.units.size(); ++i) {
    run.results.emplace_back(i, map.open(run.units[i].path, run.units[i].global, true));
    laps.lap(util::path_file_name(run.units[i].path));
  }

  facts.erase_prefix("native.");
  std::size_t index = 0, broken = 0;
  for (auto& [at, r] : run.results) {
    const Unit& unit = run.units[at];
    if (!r.opened) {
      run.problems.push_back(unit.path + ": " + r.error);
      continue;
    }
    if (!run.interpreter_read) {
      std::erase_if(r.unresolved,
                    [](const UnresolvedSymbol& s) { return util::starts_with(s.mangled, "Py") || util::starts_with(s.mangled, "_Py"); });
    }
    record_unit(host, run.sites, map, unit, r, facts, index);
    if (!facts.get_bool("native.extensions[" + std::to_string(index) + "].links").value_or(true)) ++broken;
    ++index;
  }
  facts.set("native.extension_count", static_cast<long>(index));
  facts.set("native.broken_count", static_cast<long>(broken));
  facts.set("native.object_count", static_cast<long>(map.objects().size()));
  node_add_denied_directories(run.denied);
  record_status(facts, "native", "ok", util::join(run.problems, "; "));
}

void record_skipped(model::Facts& facts) {
  facts.erase_prefix("native.");
  record_status(facts, "native", "skipped", "neither TransformerEngine nor flash-attn is installed");
}

class StartedNative final : public StartedProbe {
public:
  // The link of torch runs on a thread of its own; an exception there (std::bad_alloc) comes back
  // through the future and is rethrown by finish() on the caller's thread, never terminates.
  StartedNative(const Host& host, std::unique_ptr<NativeRun> run) : m_host(host), m_run(std::move(run)) {
    m_thread = std::async(std::launch::async, [this, values = NodeFsMemo::share()] {
      NodeFsMemo memo(values); // this thread's own, sharing the ELF files read (node_path.hpp)
      link_torch(m_host, *m_run);
      m_run->denied = node_denied_directories();
    });
  }
  ~StartedNative() override {
    if (m_thread.valid()) m_thread.wait();
  }
  StartedNative(const StartedNative&) = delete;
  StartedNative& operator=(const StartedNative&) = delete;

  void finish(model::Facts& facts) override {
    m_thread.get();
    link_rest_and_record(m_host, *m_run, facts);
  }

private:
  Host m_host; // a copy: the thread outlives no caller's Host, but owns what it reads
  std::unique_ptr<NativeRun> m_run;
  std::future<void> m_thread;
};

} // namespace

void run_native_probe(const Host& host, model::Facts& facts) {
  auto run = prepare(host, facts);
  if (run->skip) return record_skipped(facts);
  link_torch(host, *run);
  link_rest_and_record(host, *run, facts);
}

std::unique_ptr<StartedProbe> start_native_probe(const Host& host, const model::Facts& facts) {
  if (util::available_cpus() <= 1) return nullptr; // one CPU to use: the probe runs at its turn
  auto run = prepare(host, facts);
  if (run->skip) return nullptr; // recorded as skipped at its turn
  return std::make_unique<StartedNative>(host, std::move(run));
}

} // namespace probe
