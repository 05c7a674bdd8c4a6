// The python probe: interpreters and the packages that matter to TE, from dist-info metadata
// only. The interpreter examined (python.*) is --python when given, else the one whose
// site-packages hold TransformerEngine, else torch, else python3 on PATH. Package facts:
//   package.<normalized>.version  for nvidia-*, torch, transformer-engine*, flash-attn*, ...
//   torch.version / torch.cuda_version / torch.path / torch.cudnn.compiled_version
//   te.version / te.distribution / te.path / te.cuda_major
//   te.core_library.path, te.torch_extension.{path,present,reason}: TE's own search for its files
//   {te,torch,flash_attn,flash_attn_3,flash_attn_4}.requirements.*: the Requires-Dist closure
//     (requirements.hpp) — what --no-deps and --target skip
//   flash_attn.version, flash_attn_3.version, megatron_core.version, cudnn_frontend.version
//   python.bytecode[].{package,status,reason,writable}: whether `import torch` / `import
//     transformer_engine` find usable bytecode (bytecode.hpp) or compile from source in every process
#include "probe/bytecode.hpp"
#include "probe/dist_info.hpp"
#include "probe/interpreters.hpp"
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"
#include "probe/requirements.hpp"
#include "probe/te_load_order.hpp"
#include "util/file.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"

#include <map>
#include <set>

namespace probe {

namespace {

// Distribution names of TE, the core (cuXX) packages first: they name the CUDA major.
constexpr std::string_view k_te_distributions[] = {"transformer_engine_cu13", "transformer_engine_cu12", "transformer_engine",
                                                   "transformer_engine_torch", "transformer_engine_jax"};

constexpr std::string_view k_interesting[] = {"torch",         "flash_attn", "flash_attn_3", "flash_attn_4", "flashattn_hopper",
                                              "megatron_core", "jax",        "jaxlib",       "triton",       "pytorch_triton",
                                              "apex",          "deepspeed",  "nemo_toolkit", "accelerate",   "transformers"};

bool interesting(const std::string& normalized) {
  if (util::starts_with(normalized, "nvidia_") || util::starts_with(normalized, "transformer_engine") ||
      util::starts_with(normalized, "flash_attn") || normalized == "flashattn_hopper") {
    return true;
  }
  for (auto name : k_interesting) {
    if (normalized == name) return true;
  }
  return false;
}

struct Packages {
  std::vector<Distribution> all;
  const Distribution* find(std::string_view normalized) const {
    for (const auto& d : all) {
      if (d.normalized == normalized) return &d;
    }
    return nullptr;
  }
  bool has_te() const {
    for (auto name : k_te_distributions) {
      if (find(name)) return true;
    }
    return false;
  }
};

// torch/version.py holds `cuda = '13.0'` (or `cuda: Optional[str] = '12.1'`; None for CPU builds).
std::optional<model::Version> torch_cuda_from_version_py(const std::filesystem::path& root, const std::string& torch_dir) {
  auto text = read_node_file(root, torch_dir + "/version.py", 1u << 20);
  if (!text) return std::nullopt;
  for (auto line : util::split(*text, '\n')) {
    line = util::trim(line);
    if (!util::starts_with(line, "cuda")) continue;
    auto rest = line.substr(4);
    if (!rest.empty() && (std::isalnum(static_cast<unsigned char>(rest[0])) || rest[0] == '_')) continue;
    auto eq = rest.find('=');
    if (eq == std::string_view::npos) continue;
    auto value = util::trim(rest.substr(eq + 1));
    if (value.size() < 2 || (value.front() != '\'' && value.front() != '"')) return std::nullopt; // None
    auto parsed = model::Version::parse(value.substr(1, value.size() - 2));
    if (parsed) return *parsed;
    return std::nullopt;
  }
  return std::nullopt;
}

// torch/version.py's `__version__ = '2.11.0+cu130'`: what torch.__version__ says, with the CUDA
// build suffix that a PyPI wheel's METADATA version lacks.
std::optional<model::Version> torch_version_from_version_py(const std::filesystem::path& root, const std::string& torch_dir) {
  auto text = read_node_file(root, torch_dir + "/version.py", 1u << 20);
  if (!text) return std::nullopt;
  for (auto line : util::split(*text, '\n')) {
    line = util::trim(line);
    if (!util::starts_with(line, "__version__")) continue;
    auto first = line.find_first_of("'\"");
    auto last = line.find_last_of("'\"");
    if (first == std::string_view::npos || last <= first) return std::nullopt;
    auto parsed = model::Version::parse(line.substr(first + 1, last - first - 1));
    if (parsed) return *parsed;
    return std::nullopt;
  }
  return std::nullopt;
}

// "2.3.0+cu121" -> 12.1, "+cu130" -> 13.0, "+cu118" -> 11.8.
std::optional<model::Version> cuda_from_local(std::string_view local) {
  if (!util::starts_with(local, "cu") || local.size() < 4) return std::nullopt;
  auto digits = local.substr(2);
  if (!util::parse_int(digits)) return std::nullopt;
  return model::Version{static_cast<long>(*util::parse_int(digits.substr(0, digits.size() - 1))),
                        static_cast<long>(*util::parse_int(digits.substr(digits.size() - 1)))};
}

void set_version(model::Facts& facts, const std::string& name, const std::string& text, std::vector<std::string>& problems) {
  auto v = model::Version::parse(text);
  if (v) facts.set(name, *v);
  else problems.push_back(name + ": unparsable version '" + text + "'");
}

std::string package_dir(const std::filesystem::path& root, const Distribution& dist, std::string_view module) {
  std::string dir = dist.site_packages + "/" + std::string(module);
  return node_file_type(root, dir) == NodeFileType::directory ? dir : std::string{};
}

void record_te(const Host& host, const Packages& packages, model::Facts& facts, std::vector<std::string>& problems) {
  const Distribution* version_from = nullptr;
  const Distribution* core = nullptr;
  for (auto name : k_te_distributions) {
    const Distribution* d = packages.find(name);
    if (!d) continue;
    if (!core && util::starts_with(name, "transformer_engine_cu")) core = d;
    if (!version_from && (name == "transformer_engine" || util::starts_with(name, "transformer_engine_cu"))) version_from = d;
  }
  if (!version_from) {
    for (auto name : k_te_distributions) {
      if ((version_from = packages.find(name))) break;
    }
  }
  if (!version_from) return;
  set_version(facts, "te.version", version_from->version, problems);
  facts.set("te.distribution", (core ? core : version_from)->name);
  if (core) {
    if (auto major = util::parse_int(std::string_view(core->normalized).substr(std::string_view("transformer_engine_cu").size()))) {
      facts.set("te.cuda_major", static_cast<long>(*major));
    }
  }
  for (const auto& dist : packages.all) {
    if (!util::starts_with(dist.normalized, "transformer_engine")) continue;
    if (auto dir = package_dir(host.root, dist, "transformer_engine"); !dir.empty()) {
      facts.set("te.path", dir);
      break;
    }
  }
}

void record_packages(const Host& host, const Packages& packages, model::Facts& facts, std::vector<std::string>& problems) {
  for (const auto& dist : packages.all) {
    if (interesting(dist.normalized)) set_version(facts, "package." + dist.normalized + ".version", dist.version, problems);
  }
  if (const Distribution* torch = packages.find("torch")) {
    set_version(facts, "torch.version", torch->version, problems);
    std::string dir = package_dir(host.root, *torch, "torch");
    if (!dir.empty()) facts.set("torch.path", dir);
    if (!dir.empty()) {
      if (auto full = torch_version_from_version_py(host.root, dir)) facts.set("torch.version", *full);
    }
    std::optional<model::Version> cuda;
    if (!dir.empty()) cuda = torch_cuda_from_version_py(host.root, dir);
    if (!cuda) {
      if (auto v = model::Version::parse(torch->version)) cuda = cuda_from_local(v->local());
    }
    if (cuda) facts.set("torch.cuda_version", *cuda);
    // A CUDA wheel of torch pins the cuDNN wheel of its build (nvidia-cudnn-cu13==9.19.0.56):
    // torch's cuDNN check compares the runtime with that build's major.minor.
    for (const auto& text : torch->requires_dist) {
      auto r = parse_requirement(text);
      if (!r || !util::starts_with(r->normalized, "nvidia_cudnn_cu") || !util::starts_with(r->specifier, "==")) continue;
      if (auto v = model::Version::parse(r->specifier.substr(2))) facts.set("torch.cudnn.compiled_version", *v);
    }
  }
  record_te(host, packages, facts, problems);
  if (const Distribution* d = packages.find("flash_attn")) set_version(facts, "flash_attn.version", d->version, problems);
  // FlashAttention 3 was published as flashattn-hopper before it became flash-attn-3; TE asks
  // for the name of its time (1.x: flashattn-hopper, 2.x: flash-attn-3).
  const Distribution* fa3 = packages.find("flash_attn_3");
  if (!fa3) fa3 = packages.find("flashattn_hopper");
  if (fa3) set_version(facts, "flash_attn_3.version", fa3->version, problems);
  if (const Distribution* d = packages.find("flash_attn_4")) set_version(facts, "flash_attn_4.version", d->version, problems);
  if (const Distribution* d = packages.find("megatron_core")) set_version(facts, "megatron_core.version", d->version, problems);
  if (const Distribution* d = packages.find("nvidia_cudnn_frontend")) set_version(facts, "cudnn_frontend.version", d->version, problems);
}

// TE's files as its import finds them: the core library and, where PyTorch is there or the
// transformer_engine_torch distribution is, the PyTorch extension.
void record_te_files(const Host& host, const Interpreter& it, const Packages& packages, model::Facts& facts) {
  auto te_dir = facts.get_string("te.path");
  if (!te_dir) return;
  if (auto core = te_core_library(host.root, *te_dir)) facts.set("te.core_library.path", *core);
  if (!packages.find("torch") && !packages.find("transformer_engine_torch")) return;
  // TE 2.0-2.3 search the same three directories (v2.3 transformer_engine/pytorch/__init__.py
  // L31-70) and take the first file they find, where 2.4+ raise on several.
  auto ext = te_shared_object(host.root, *te_dir, it.purelib, "transformer_engine_torch");
  auto te_version = facts.get_version("te.version");
  bool several_ok = !ext && ext.error().kind == util::ErrorKind::invalid && te_version && *te_version < model::Version{2, 4};
  facts.set("te.torch_extension.present", ext.ok() || several_ok);
  if (ext) facts.set("te.torch_extension.path", *ext);
  else if (several_ok)
    facts.set("te.torch_extension.reason", ext.error().message + " (TE " + te_version->to_string() + " takes the first)");
  else facts.set("te.torch_extension.reason", ext.error().message);
}

// Whether `import torch` / `import transformer_engine` start from bytecode: a stat and a 16-byte
// read per package. Only for CPython of a known version (the cache tag names it), and not under a
// relative PYTHONPYCACHEPREFIX (it depends on the job's working directory).
void record_bytecode(const Host& host, const Interpreter& it, model::Facts& facts) {
  if (!it.version || it.version->components().size() < 2) return;
  std::string prefix;
  if (auto p = host.env.find("PYTHONPYCACHEPREFIX"); p != host.env.end() && !p->second.empty()) {
    if (p->second.front() != '/') return;
    prefix = p->second;
  }
  std::string tag = cpython_cache_tag(it.version->major(), it.version->minor());
  std::size_t i = 0;
  for (auto [fact, package] : {std::pair{"torch.path", "torch"}, std::pair{"te.path", "transformer_engine"}}) {
    auto dir = facts.get_string(fact);
    if (!dir) continue;
    auto state = package_bytecode(host.root, *dir, tag, prefix);
    if (!state) continue;
    std::string base = "python.bytecode[" + std::to_string(i++) + "].";
    facts.set(base + "package", std::string(package));
    facts.set(base + "status", state->status);
    facts.set(base + "reason", state->reason);
    if (state->writable) facts.set(base + "writable", *state->writable);
  }
}

} // namespace

void run_python_probe(const Host& host, model::Facts& facts) {
  util::log::Laps laps("python probe"); // -vv
  InterpreterScan scan = find_interpreters(host);
  laps.lap("interpreters (" + std::to_string(scan.interpreters.size()) + ")");
  std::vector<std::string> problems = scan.problems;
  std::vector<std::string> recorded_problems; // the chosen interpreter's packages': after every scan's
  std::vector<Packages> packages(scan.interpreters.size());
  std::optional<std::size_t> chosen;
  // The chosen interpreter's packages and TE's files, then what the native probe starts from is
  // known (the interpreter, torch's and TE's places and versions): its link of torch overlaps the
  // rest of this probe.
  auto record_chosen = [&] {
    const Interpreter& it = scan.interpreters[*chosen];
    facts.set("python.executable", it.path);
    if (it.version) facts.set("python.version", *it.version);
    facts.set("python.prefix", it.prefix);
    if (!it.purelib.empty()) facts.set("python.site_packages", it.site_packages.empty() ? it.purelib : it.site_packages.front());
    facts.set("python.env_kind", it.env_kind);
    record_packages(host, packages[*chosen], facts, recorded_problems);
    laps.lap("packages");
    record_te_files(host, it, packages[*chosen], facts);
    laps.lap("TE's files");
    if (host.ready) host.ready("python", facts);
  };
  for (std::size_t i = 0; i < scan.interpreters.size(); ++i) {
    const Interpreter& it = scan.interpreters[i];
    std::string base = "python.interpreters[" + std::to_string(i) + "]";
    facts.set(base + ".path", it.path);
    if (it.version) facts.set(base + ".version", *it.version);
    if (!it.site_packages.empty()) facts.set(base + ".site_packages", it.site_packages.front());
    std::set<std::string> seen; // a distribution in two site dirs: the first on sys.path wins
    for (const auto& site : it.package_dirs()) {
      SiteScan site_scan = scan_site_packages(host.root, site, {}, interesting);
      for (auto& problem : site_scan.problems) problems.push_back(std::move(problem));
      for (auto& dist : site_scan.distributions) {
        if (seen.insert(dist.normalized).second) packages[i].all.push_back(std::move(dist));
      }
    }
    // The choice below is made already when this is --python's interpreter or the first with TE
    // (PATH's order): the interpreters after it are scanned for their own facts only.
    if (!chosen && ((i == 0 && host.python && it.origin == "option") || packages[i].has_te())) {
      chosen = i;
      laps.lap("site-packages (up to the chosen interpreter)");
      record_chosen();
    }
  }
  laps.lap("site-packages");
  if (scan.interpreters.empty()) {
    facts.set("probe.python.status", "not_installed");
    facts.set("probe.python.reason",
              problems.empty() ? std::string("no python3 on PATH, no VIRTUAL_ENV / CONDA_PREFIX") : util::join(problems, "; "));
    return;
  }

  if (!chosen) {
    for (std::size_t i = 0; !chosen && i < packages.size(); ++i) {
      if (packages[i].find("torch")) chosen = i;
    }
    for (std::size_t i = 0; !chosen && i < scan.interpreters.size(); ++i) {
      if (scan.interpreters[i].origin == "path" && std::filesystem::path(scan.interpreters[i].path).filename() == "python3") chosen = i;
    }
    if (!chosen) chosen = 0;
    record_chosen();
  }
  for (auto& problem : recorded_problems) problems.push_back(std::move(problem));

  const Interpreter& it = scan.interpreters[*chosen];
  record_bytecode(host, it, facts);
  laps.lap("bytecode");
  record_requirements(host, it, packages[*chosen].all, facts, problems);
  laps.lap("requirements");

  facts.set("probe.python.status", "ok");
  if (!problems.empty()) facts.set("probe.python.reason", util::join(problems, "; "));
}

} // namespace probe
