// The libraries probe: every copy of cuDNN / NCCL / NVRTC / cudart / libcuda on the node, the
// version of each, and the copy each consumer really loads:
//   te.<lib>.*     TE's own search (te_load_order.hpp) — or, for what TE does not search for,
//                  the NEEDED entries of libtransformer_engine.so;
//   torch.<lib>.*  the NEEDED entries of torch's shared objects through the loader model;
//   <lib>.version  TE's copy, else torch's, else what the loader itself would pick for the
//                  library's SONAME.
// PyTorch's collect_env reports whatever ldconfig lists first; this probe reports what the
// process maps, with the reason it wins.
#include "probe/cudnn_parts.hpp"
#include "probe/dist_info.hpp"
#include "probe/import_order.hpp"
#include "probe/interpreters.hpp"
#include "probe/library_copies.hpp"
#include "probe/library_version.hpp"
#include "probe/loader_model.hpp"
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"
#include "probe/te_load_order.hpp"
#include "probe/torch_load_order.hpp"
#include "probe/tree_policy.hpp"
#include "util/file.hpp"
#include "util/logging.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <future>
#include <mutex>
#include <optional>
#include <set>

namespace probe {

namespace {

struct WheelFile {
  model::Version version;
  std::string distribution; // metadata directory
  std::string name;         // the distribution as METADATA names it (nvidia-cudnn-cu13)
  std::string version_text; // its version as pip writes it (9.19.0.56)
};

// Real path of every vendor library file that an nvidia-* wheel's RECORD lists.
std::map<std::string, WheelFile> wheel_files(const Host& host, const std::vector<Interpreter>& interpreters,
                                             std::vector<std::string>& problems) {
  std::map<std::string, WheelFile> out;
  std::set<std::string> sites;
  for (const auto& it : interpreters)
    for (const auto& dir : it.package_dirs()) sites.insert(dir);
  for (const auto& site : sites) {
    // Only nvidia-* wheels own vendor libraries: skip reading every other METADATA.
    for (const auto& dist : scan_site_packages(host.root, site, "nvidia").distributions) {
      // A wheel may ship several (nvidia-cublas: libcublas and libcublasLt).
      std::vector<const LibrarySpec*> owners;
      for (const auto& spec : library_specs()) {
        if (!spec.dist_prefix.empty() && util::starts_with(dist.normalized, spec.dist_prefix)) owners.push_back(&spec);
      }
      if (owners.empty()) continue;
      auto version = model::Version::parse(dist.version);
      auto files = read_record(host.root, dist);
      if (!version || !files) {
        problems.push_back(dist.metadata_path + ": " + (!version ? version.error().message : files.error().message));
        continue;
      }
      for (const auto& file : *files) {
        std::string name = std::filesystem::path(file).filename().string();
        if (std::none_of(owners.begin(), owners.end(), [&](const LibrarySpec* o) { return is_library_file(*o, name); })) continue;
        if (auto real = resolve_node_path(host.root, file))
          out.emplace(real->real.string(), WheelFile{*version, dist.metadata_path, dist.name, dist.version});
      }
    }
  }
  return out;
}

std::optional<long> soname_major(const LibrarySpec& spec, const LibraryCopy& copy) {
  std::string suffix = so_suffix(spec, copy.soname.empty() ? std::filesystem::path(copy.real_path).filename().string() : copy.soname);
  auto dot = suffix.find('.');
  auto n = util::parse_int(std::string_view(suffix).substr(0, dot));
  if (!n) return std::nullopt;
  return static_cast<long>(*n);
}

std::optional<CopyVersion> copy_version(const Host& host, const LibrarySpec& spec, const LibraryCopy& copy,
                                        const std::map<std::string, WheelFile>& wheels, std::vector<std::string>& problems) {
  if (auto v = version_from_file_name(spec, std::filesystem::path(copy.real_path).filename().string())) return v;
  if (auto it = wheels.find(copy.real_path); it != wheels.end())
    return CopyVersion{it->second.version, "dist_info", it->second.distribution};
  if (auto v = version_from_header(host.root, spec, copy.real_path, soname_major(spec, copy))) return v;
  if (auto v = version_from_embedded_string(spec, NodeFile{host.root, copy.real_path})) return v;
  if (!spec.api) return std::nullopt;
  // The only place the probe loads a file of the node: the rule for untrusted trees decides.
  if (auto refused = load_refusal(host, copy.real_path)) {
    problems.push_back(copy.real_path + ": " + *refused);
    return std::nullopt;
  }
  auto loaded = version_from_loading(spec, host_path(host.root, copy.real_path), host.vendor_timeout);
  if (!loaded) {
    problems.push_back(copy.real_path + ": " + loaded.error().message);
    return std::nullopt;
  }
  return *loaded;
}

const LibraryCopy* copy_at(const std::vector<LibraryCopy>& copies, const std::string& real) {
  for (const auto& c : copies) {
    if (c.real_path == real) return &c;
  }
  return nullptr;
}

// Makes sure a consumer's choice is among the copies (TE may search CUDNN_HOME, which the copy
// scan does not cover).
void ensure_copy(const Host& host, std::vector<LibraryCopy>& copies, const ConsumerChoice& choice, std::string_view source) {
  if (copy_at(copies, choice.real)) return;
  auto dynamic = read_elf_dynamic(NodeFile{host.root, choice.real});
  LibraryCopy copy;
  copy.real_path = choice.real;
  copy.seen_as.push_back(choice.path);
  copy.source = std::string(source);
  copy.soname = dynamic ? dynamic->soname : std::string{};
  copies.push_back(std::move(copy));
}

void set_consumer(model::Facts& facts, const std::string& base, const std::vector<LibraryCopy>& copies,
                  const util::Result<ConsumerChoice>& choice) {
  if (!choice) {
    facts.set(base + ".reason", choice.error().message);
    return;
  }
  facts.set(base + ".path", choice->real);
  if (const LibraryCopy* c = copy_at(copies, choice->real); c && c->version) facts.set(base + ".version", c->version->version);
  std::string reason = choice->reason;
  if (choice->path != choice->real) reason += " [opened as " + choice->path + "]";
  facts.set(base + ".reason", reason);
}

std::string describe_version(const std::vector<LibraryCopy>& copies, const std::string& real) {
  const LibraryCopy* c = copy_at(copies, real);
  return c && c->version ? c->version->version.to_string() : std::string("unknown version");
}

} // namespace

// cuda.toolkit_*: /usr/local/cuda's version.json (or, without it, the version of the cudart it
// holds); cuda.runtime_version: the CUDA a job runs, i.e. torch's build when torch is there, else
// the cudart the loader would pick.
void record_cuda_versions(const Host& host, model::Facts& facts) {
  auto resolved = resolve_node_path(host.root, "/usr/local/cuda");
  if (resolved) {
    facts.set("cuda.toolkit_path", resolved->real.string());
    if (auto json = read_node_file(host.root, resolved->real / "version.json", 1u << 20)) {
      // {"cuda" : {"name" : "CUDA SDK", "version" : "13.0.2"}, ...}: the first "version" after "cuda".
      auto at = json->find("\"cuda\"");
      auto key = at == std::string::npos ? std::string::npos : json->find("\"version\"", at);
      auto open = key == std::string::npos ? std::string::npos : json->find('"', json->find(':', key));
      auto close = open == std::string::npos ? std::string::npos : json->find('"', open + 1);
      if (close != std::string::npos) {
        if (auto v = model::Version::parse(json->substr(open + 1, close - open - 1))) facts.set("cuda.toolkit_version", *v);
      }
    }
    if (!facts.has("cuda.toolkit_version")) {
      for (std::size_t i = 0, n = facts.count("cudart.copies"); i < n; ++i) {
        std::string base = "cudart.copies[" + std::to_string(i) + "]";
        if (facts.get_string(base + ".source") != "cuda_home") continue;
        if (auto v = facts.get_version(base + ".version")) facts.set("cuda.toolkit_version", model::Version{v->major(), v->minor()});
        break;
      }
    }
  }
  if (auto torch_cuda = facts.get_version("torch.cuda_version")) {
    facts.set("cuda.runtime_version", *torch_cuda);
  } else if (auto cudart = facts.get_version("cudart.version")) {
    facts.set("cuda.runtime_version", model::Version{cudart->major(), cudart->minor()});
  }
}

namespace {

// One library's copies, and torch's choice among them.
struct Library {
  const LibrarySpec* spec;
  CopyScan scan;
  std::optional<util::Result<ConsumerChoice>> torch_choice;
};

// One run of the probe. Its first part, every library's copies, needs no fact of the python
// probe (the interpreters it searches are found from the environment), so a started probe makes
// it on a thread while the python probe runs; TE's recursive globs, which need only the
// environment, are walked on another. The consumers' choices come after, with python's facts.
struct LibrariesRun {
  std::vector<std::string> problems;
  std::shared_ptr<const LdCache> cache;
  InterpreterScan interpreters;
  std::vector<SearchDir> dirs;
  std::map<std::string, WheelFile> wheels;
  std::vector<Library> libraries;
  std::vector<std::string> denied; // what a thread's memo could not read
  TeWalks walks;                   // made ahead (started probe) or as the search goes
};

void scan_copies(const Host& host, LibrariesRun& run) {
  // Where the probe's time goes, with -vv (bench/ and docs/records/performance.md use it).
  util::log::Laps laps("libraries probe");
  util::Error cache_error;
  run.cache = shared_ld_cache(host.root, &cache_error);
  if (!run.cache && cache_error.kind != util::ErrorKind::not_found) run.problems.push_back(cache_error.message);
  laps.lap("ld.so.cache");
  run.interpreters = find_interpreters(host);
  laps.lap("interpreters");
  run.dirs = library_search_dirs(host, run.interpreters.interpreters);
  laps.lap("search directories (" + std::to_string(run.dirs.size()) + ")");
  // The wheels' RECORDs (read beside the copies: a third of this scan on the GPU node, which the
  // copies do not need; only their versions do, later). Their problems come first, as before.
  std::vector<std::string> wheel_problems, wheel_denied;
  std::future<std::map<std::string, WheelFile>> wheels;
  if (util::available_cpus() > 1) {
    wheels = std::async(std::launch::async, [&host, &run, &wheel_problems, &wheel_denied, values = NodeFsMemo::share()] {
      NodeFsMemo memo(values); // this thread's own, sharing the METADATA read
      auto found = wheel_files(host, run.interpreters.interpreters, wheel_problems);
      wheel_denied = node_denied_directories();
      return found;
    });
  } else {
    run.wheels = wheel_files(host, run.interpreters.interpreters, wheel_problems);
  }
  const LdCache* cache_ptr = run.cache.get();
  std::vector<std::string> copy_problems;
  run.libraries.reserve(library_specs().size());
  for (const auto& spec : library_specs()) {
    Library& lib = run.libraries.emplace_back(Library{&spec, find_copies(host.root, spec, run.dirs, cache_ptr), std::nullopt});
    for (auto& p : lib.scan.problems) copy_problems.push_back(std::move(p));
    laps.lap(std::string(spec.key) + ": copies (" + std::to_string(lib.scan.copies.size()) + ")");
  }
  if (wheels.valid()) {
    run.wheels = wheels.get();
    node_add_denied_directories(wheel_denied);
    laps.lap("wheel RECORDs (beyond the copies)");
  }
  for (auto& p : wheel_problems) run.problems.push_back(std::move(p));
  for (auto& p : copy_problems) run.problems.push_back(std::move(p));
}

void choose_and_record(const Host& host, LibrariesRun& run, model::Facts& facts) {
  util::log::Laps laps("libraries probe");
  node_add_denied_directories(run.denied);
  std::vector<std::string>& problems = run.problems;
  const LdCache* cache_ptr = run.cache.get();
  std::map<std::string, WheelFile>& wheels = run.wheels;
  LoaderView view = make_loader_view(host, cache_ptr);

  auto torch_dir = facts.get_string("torch.path");
  auto te_dir = facts.get_string("te.path");
  auto te_version = facts.get_version("te.version");
  TeContext te_ctx;
  te_ctx.view = view;
  te_ctx.env = &host.env;
  te_ctx.purelib = facts.get_string("python.site_packages").value_or("");
  te_ctx.cache = cache_ptr;
  te_ctx.walks = std::move(run.walks);
  std::optional<ElfDynamic> te_core;
  std::string te_core_path;
  if (te_dir) {
    if (auto core = te_core_library(host.root, *te_dir)) {
      te_core_path = *core;
      if (auto real = resolve_node_path(host.root, *core)) {
        if (auto d = read_elf_dynamic(NodeFile{host.root, real->real})) te_core = std::move(d).value();
      }
    }
  }
  for (auto& lib : run.libraries) {
    if (!torch_dir || lib.spec->key == "libcuda") continue;
    lib.torch_choice = torch_library_choice(view, *torch_dir, *lib.spec);
    if (*lib.torch_choice) ensure_copy(host, lib.scan.copies, **lib.torch_choice, "site_packages");
  }
  laps.lap("torch's choices");

  std::size_t total_copies = 0;
  for (auto& lib : run.libraries) {
    const LibrarySpec& spec = *lib.spec;
    const std::string key(spec.key);
    std::vector<LibraryCopy>& copies = lib.scan.copies;
    std::optional<util::Result<ConsumerChoice>>& torch_choice = lib.torch_choice;

    // TE's choice.
    std::optional<util::Result<ConsumerChoice>> te_choice;
    bool te_by_needed = false; // TE's copy comes from its core library's NEEDED, not its own dlopen
    if (te_version && te_dir && spec.key != "libcuda") {
      util::Result<ConsumerChoice> searched = util::Error{util::ErrorKind::unsupported, ""};
      if (spec.key != "nccl") searched = te_search(te_ctx, *te_version, spec);
      bool te_searches = searched.ok() || searched.error().kind != util::ErrorKind::unsupported;
      // cudart, cuBLAS: TE loads them only from a wheel (v2.4+); when that finds nothing,
      // libtransformer_engine.so's NEEDED decides.
      bool wheel_only = spec.key == "cudart" || spec.key == "cublas" || spec.key == "cublaslt";
      if (wheel_only && !searched.ok()) te_searches = false;
      if (te_searches) {
        te_choice = std::move(searched);
      } else {
        te_by_needed = true;
        // TE does not search for it: libtransformer_engine.so's NEEDED entry decides.
        std::string why = searched.error().message.empty() ? "TE does not search for " + key + " itself" : searched.error().message;
        std::optional<std::string> needed;
        if (te_core) {
          for (const auto& n : te_core->needed) {
            if (is_library_file(spec, n)) needed = n;
          }
        }
        if (!te_core) {
          te_choice = util::Error{util::ErrorKind::not_found, why + "; libtransformer_engine.so not found or unreadable under " + *te_dir};
        } else if (!needed) {
          std::string text = why + "; libtransformer_engine.so has no NEEDED " + std::string(spec.stem) + ".so*";
          if (torch_choice && *torch_choice) {
            ConsumerChoice c = **torch_choice;
            c.reason = text + ", so the copy in a TE process is torch's: " + c.reason;
            te_choice = c;
          } else {
            te_choice = util::Error{util::ErrorKind::not_found, text};
          }
        } else {
          auto found = resolve_needed(view, *needed, Requester{te_core_path, &*te_core});
          if (!found) {
            te_choice = util::Error{found.error().kind, why + "; " + found.error().message};
          } else {
            ConsumerChoice c;
            c.path = found->path;
            auto real = resolve_node_path(host.root, found->path);
            c.real = real ? real->real.string() : found->path;
            c.soname = *needed;
            c.reason = why + "; " + found->reason + " (NEEDED " + *needed + " of libtransformer_engine.so)";
            te_choice = c;
          }
        }
      }
      if (*te_choice) ensure_copy(host, copies, **te_choice, "site_packages");
    }
    // The loader's own pick for the highest SONAME among the copies.
    std::optional<util::Result<ConsumerChoice>> loader_choice;
    {
      std::string best;
      long best_major = -1;
      for (const auto& c : copies) {
        if (c.soname.empty()) continue;
        auto major = soname_major(spec, c);
        if (major && *major > best_major) {
          best_major = *major;
          best = c.soname;
        }
      }
      if (spec.key == "libcuda") best = "libcuda.so.1";
      if (!best.empty()) {
        auto found = resolve_needed(view, best, Requester{});
        if (found) {
          auto real = resolve_node_path(host.root, found->path);
          ConsumerChoice c{found->path, real ? real->real.string() : found->path, best, "dlopen(\"" + best + "\") via " + found->reason};
          ensure_copy(host, copies, c, found->step == "ld_library_path" ? "ld_library_path" : "system");
          loader_choice = c;
        } else {
          loader_choice = util::Error{found.error().kind, found.error().message};
        }
      }
    }

    // Versions of every copy.
    laps.lap(key + ": TE's and the loader's choices");
    for (auto& c : copies) c.version = copy_version(host, spec, c, wheels, problems);
    laps.lap(key + ": versions");

    // Import order (import_order.hpp): with torch imported first, TE's own dlopen of another
    // copy (a path, or the dev name) maps that copy beside torch's, while a NEEDED entry of
    // libtransformer_engine.so binds to torch's; with TE first, torch's NEEDED of the same SONAME
    // binds to TE's copy. The cuDNN facts say it per order; the reason names the other copy.
    if (te_choice && *te_choice && torch_choice && *torch_choice && (*te_choice)->real != (*torch_choice)->real) {
      const LibraryCopy* te_copy = copy_at(copies, (*te_choice)->real);
      const LibraryCopy* torch_copy = copy_at(copies, (*torch_choice)->real);
      if (te_copy && torch_copy && !te_copy->soname.empty() && te_copy->soname == torch_copy->soname && te_by_needed) {
        // A NEEDED entry is matched by SONAME against what is mapped: the first copy wins.
        (*te_choice)->reason += "; note: after `import torch` torch's " + torch_copy->real_path + " (" +
                                describe_version(copies, torch_copy->real_path) + ") is already mapped under SONAME " + te_copy->soname +
                                ", and libtransformer_engine.so's NEEDED " + te_copy->soname +
                                " binds to it: in that process TE runs on torch's copy; imported first, TE's is the one torch binds to";
      } else if (te_copy && torch_copy && !te_copy->soname.empty() && te_copy->soname == torch_copy->soname) {
        (*te_choice)->reason += "; torch loads another copy under the same SONAME " + te_copy->soname + " (" + torch_copy->real_path +
                                ", " + describe_version(copies, torch_copy->real_path) +
                                "): imported after torch, TE maps this copy beside it and runs on it; imported "
                                "before torch, this copy is the one torch binds to";
      }
    }

    // Facts.
    facts.erase_prefix(key + ".copies");
    std::set<std::string> versions;
    for (std::size_t i = 0; i < copies.size(); ++i) {
      const auto& c = copies[i];
      std::string base = key + ".copies[" + std::to_string(i) + "]";
      facts.set(base + ".path", c.real_path);
      facts.set(base + ".source", c.source);
      if (c.version) {
        facts.set(base + ".version", c.version->version);
        facts.set(base + ".version_source", c.version->source);
        versions.insert(c.version->version.to_string());
      }
    }
    // Whether each copy a consumer loads is whole (cudnn_parts.hpp).
    if (spec.key == "cudnn") {
      std::set<std::string> loaded;
      for (const auto* choice : {&te_choice, &torch_choice, &loader_choice})
        if (*choice && **choice) loaded.insert((**choice)->real);
      for (std::size_t i = 0; i < copies.size(); ++i) {
        const auto& c = copies[i];
        if (!loaded.count(c.real_path)) continue;
        std::string base = key + ".copies[" + std::to_string(i) + "]";
        auto major = soname_major(spec, c);
        if (!major && c.version) major = c.version->version.major();
        auto missing = missing_cudnn_parts(host.root, c.real_path, major.value_or(0));
        facts.set(base + ".missing_sublibrary_count", static_cast<long>(missing.size()));
        if (!missing.empty()) facts.set(base + ".missing_sublibraries", util::join(missing, ", "));
        if (auto w = wheels.find(c.real_path); w != wheels.end()) {
          facts.set(base + ".distribution", w->second.name);
          facts.set(base + ".distribution_version", w->second.version_text);
        }
      }
    }
    total_copies += copies.size();
    facts.set(key + ".copy_count", static_cast<long>(copies.size()));
    facts.set(key + ".distinct_versions", static_cast<long>(versions.size()));
    if (spec.key == "cudnn" || spec.key == "nccl" || spec.key == "nvrtc" || spec.key == "cublaslt")
      facts.set(key + ".copies_disagree", versions.size() > 1);
    if (torch_choice) set_consumer(facts, "torch." + key, copies, *torch_choice);
    if (te_choice) set_consumer(facts, "te." + key, copies, *te_choice);
    derive_import_orders(facts, key);

    const util::Result<ConsumerChoice>* winner = nullptr;
    std::string loaded_by;
    for (auto [choice, who] :
         {std::pair{&te_choice, "transformer_engine"}, std::pair{&torch_choice, "torch"}, std::pair{&loader_choice, "loader"}}) {
      if (*choice && **choice) {
        winner = &**choice;
        loaded_by = who;
        break;
      }
    }
    if (winner) {
      facts.set(key + ".path", (*winner)->real);
      if (const LibraryCopy* c = copy_at(copies, (*winner)->real); c && c->version) facts.set(key + ".version", c->version->version);
      if (spec.key == "cudnn") facts.set("cudnn.loaded_by", loaded_by);
    }
    if (spec.key == "libcuda") {
      for (const auto& c : copies) {
        if (c.source != "compat") continue;
        facts.set("cuda.compat.path", c.real_path);
        if (c.version) facts.set("cuda.compat.libcuda_version", c.version->version);
        facts.set("cuda.compat.in_use", winner && (*winner)->real == c.real_path);
        break;
      }
    }
  }

  record_cuda_versions(host, facts);
  // A walk TE's search consulted stopped at a cap: the command ends with it (app::load_facts).
  if (!te_ctx.caps_hit.empty()) facts.set("probe.limit_exceeded", util::join(te_ctx.caps_hit, "; "));
  facts.set("probe.libraries.status", total_copies > 0 ? "ok" : "not_installed");
  if (!problems.empty()) facts.set("probe.libraries.reason", util::join(problems, "; "));
  else if (total_copies == 0) facts.set("probe.libraries.reason", "no copy of cuDNN, NCCL, NVRTC, cudart or libcuda found");
}

class StartedLibraries final : public StartedProbe {
public:
  explicit StartedLibraries(const Host& host) : m_host(host) {
    auto values = NodeFsMemo::share();
    // Both threads' exceptions come back through their futures: finish() rethrows them on the
    // caller's thread (an exception leaving a std::thread's function would terminate).
    // Every directory any TE release globs in this environment (CUDNN_HOME, CUDA_HOME, ...,
    // /usr/local/cuda): whether TE is there is the python probe's to say; the walk costs a spare
    // core a few milliseconds and is dropped when TE is not.
    TeContext env_only;
    env_only.view.root = m_host.root;
    env_only.env = &m_host.env;
    m_walker = std::async(std::launch::async, [this, values, dirs = te_glob_dirs(env_only, std::nullopt)] {
                 NodeFsMemo memo(values);
                 m_walks = te_walk_dirs(m_host.root, dirs);
                 m_walk_denied = node_denied_directories();
               }).share();
    // The copies, then, once the python probe's facts are known (known()), the choices of torch,
    // TE and the loader among them: on this thread, beside the probes in between (on the H200 node
    // with TE the choices took 1.2 ms of the main thread after the driver and PCI probes), into a
    // copy of those facts whose changes (model::FactsJournal) finish() applies.
    m_copies = std::async(std::launch::async, [this, values, walker = m_walker, python = m_python.get_future()]() mutable {
      NodeFsMemo memo(values); // this thread's own, sharing the ELF files and METADATA read
      scan_copies(m_host, m_run);
      std::optional<model::Facts> known = python.get();
      if (!known) return; // abandoned: no finish()
      m_run.denied = node_denied_directories();
      walker.wait(); // its own copy of the shared future: finish() waits on the member
      if (known->has("te.version")) {
        m_run.walks = std::move(m_walks);
        m_run.denied.insert(m_run.denied.end(), m_walk_denied.begin(), m_walk_denied.end());
      }
      model::FactsJournal journal; // what the choices set and erased, for finish() to apply
      model::Facts facts = std::move(*known);
      facts.attach(journal);
      choose_and_record(m_host, m_run, facts);
      for (auto& name : journal.changed(facts)) {
        const model::Value* value = facts.get(name);
        m_changes.emplace_back(std::move(name), value ? std::optional<model::Value>(*value) : std::nullopt);
      }
      m_denied = node_denied_directories();
    });
  }
  ~StartedLibraries() override {
    hand_over(std::nullopt); // a thread still waiting for the python probe's facts stops
    if (m_copies.valid()) m_copies.wait();
    if (m_walker.valid()) m_walker.wait();
  }
  StartedLibraries(const StartedLibraries&) = delete;
  StartedLibraries& operator=(const StartedLibraries&) = delete;

  void known(std::string_view probe, const model::Facts& facts) override {
    if (probe == "python") hand_over(facts);
  }

  void finish(model::Facts& facts) override {
    hand_over(facts); // without the python probe (--only): the facts there are
    m_walker.wait(); // both done before either exception leaves
    m_copies.get();
    m_walker.get();
    for (const auto& [name, value] : m_changes) {
      if (value) facts.set(name, *value);
      else facts.erase(name);
    }
    node_add_denied_directories(m_denied);
  }

private:
  void hand_over(std::optional<model::Facts> facts) {
    std::lock_guard lock(m_mutex);
    if (m_handed) return;
    m_handed = true;
    m_python.set_value(std::move(facts));
  }

  Host m_host;
  LibrariesRun m_run;
  std::vector<std::string> m_denied, m_walk_denied;
  TeWalks m_walks;
  std::vector<std::pair<std::string, std::optional<model::Value>>> m_changes; // set (a value) or erased by the choices
  std::mutex m_mutex;
  bool m_handed = false;
  std::promise<std::optional<model::Facts>> m_python;
  std::future<void> m_copies;
  std::shared_future<void> m_walker;
};

} // namespace

void run_libraries_probe(const Host& host, model::Facts& facts) {
  LibrariesRun run;
  scan_copies(host, run);
  choose_and_record(host, run, facts);
}

std::unique_ptr<StartedProbe> start_libraries_probe(const Host& host) {
  if (util::available_cpus() <= 1) return nullptr; // one CPU to use: the probe runs at its turn
  return std::make_unique<StartedLibraries>(host);
}

} // namespace probe
