// TE's library search as data (te_load_order.hpp), read from
// /work/.mirror/NVIDIA+TransformerEngine at each release tag v1.10 ... v2.18:
//
//   cuDNN
//     v1.10        L48-78    wheel nvidia/cudnn/lib, CUDNN_HOME|CUDNN_PATH, CUDA_HOME|CUDA_PATH, dlopen
//     v1.11-v2.3   L48-79    wheel first; CUDA_HOME|CUDA_PATH|/usr/local/cuda
//     v2.4-v2.5    L255-279  (v2.4) CUDNN_*, CUDA_*|/usr/local/cuda, then the wheel, dlopen
//     v2.6-v2.9    L226-262  (v2.6) + `ldconfig -p | grep libcudnn.so` before dlopen
//     v2.10        L282-316  ldconfig line test is only "libcudnn" in line
//     v2.11-v2.18  L257-352  (v2.11; v2.18 L259-354) _load_cuda_library: CUDNN_HOME, CUDNN_PATH,
//                            CUDA_HOME, CUDA_PATH, /usr/local/cuda each, stubs skipped, then
//                            dlopen("libcudnn.so"), then wheels nvidia/cu13/cudnn, nvidia/cu13/lib,
//                            nvidia/cudnn, nvidia/cuda_cudnn
//   NVRTC: the same shape with CUDA_* only before v2.11 (stub and libnvrtc-builtins filtered),
//     wheel nvidia/cuda_nvrtc/lib from v2.4, `ldconfig` needle "libnvrtc" (v1.10-v2.5, stub and
//     builtins skipped), "libnvrtc.so" (v2.6-v2.9), "libnvrtc" (v2.10).
//   cudart: TE loads none itself before v2.4 (libtransformer_engine.so's NEEDED decides);
//     v2.4-v2.10 the wheel nvidia/cuda_runtime/lib first (v2.4 L324); v2.11+ wheel cudart only
//     when neither NVRTC nor cuRAND came from the system (v2.11 L374-378).
//   cuBLAS / cuBLASLt: the same shape from the wheel nvidia/cublas/lib (v2.4 L323, v2.10 L390;
//     v2.11+ also nvidia/cu13/...), else libtransformer_engine.so's NEEDED.
#include "probe/te_load_order.hpp"

#include "probe/node_path.hpp"
#include "util/input_guard.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <sys/stat.h>

namespace probe {

namespace {

TeStep glob(std::vector<std::string_view> vars, std::string_view default_dir, bool skip_stub) {
  TeStep s{TeStepKind::glob, std::move(vars), default_dir, skip_stub, {}, {}, {}, {}, {}};
  return s;
}
TeStep pip(std::string_view dir, std::string_view file_prefix) {
  return TeStep{TeStepKind::pip, {}, {}, false, dir, file_prefix, {}, {}, {}};
}
TeStep ldconfig(std::string_view needle, std::vector<std::string_view> excludes = {}) {
  return TeStep{TeStepKind::ldconfig, {}, {}, false, {}, {}, needle, std::move(excludes), {}};
}
TeStep dlopen(std::string_view name) { return TeStep{TeStepKind::dlopen, {}, {}, false, {}, {}, {}, {}, name}; }

// v2.11+ _load_cuda_library(name): system first, then the wheels.
std::vector<TeStep> v211_steps(std::string_view upper, std::string_view lower) {
  static std::set<std::string> storage; // string_views into stable storage
  auto keep = [](std::string s) -> std::string_view { return *storage.insert(std::move(s)).first; };
  return {
      glob({keep(std::string(upper) + "_HOME")}, "", true),
      glob({keep(std::string(upper) + "_PATH")}, "", true),
      glob({"CUDA_HOME"}, "", true),
      glob({"CUDA_PATH"}, "", true),
      glob({}, "/usr/local/cuda", true),
      dlopen(keep("lib" + std::string(lower) + ".so")),
      pip(keep("nvidia/cu13/" + std::string(lower) + "/lib"), "lib"),
      pip("nvidia/cu13/lib", keep("lib" + std::string(lower))),
      pip(keep("nvidia/" + std::string(lower) + "/lib"), "lib"),
      pip(keep("nvidia/cuda_" + std::string(lower) + "/lib"), "lib"),
  };
}

const std::vector<TeSearchRule>& base_rules() {
  static const std::vector<TeSearchRule> table = {
      {"cudnn",
       ">=1.10,<1.11",
       "v1.10 transformer_engine/common/__init__.py L48-78 (_load_cudnn)",
       {pip("nvidia/cudnn/lib", "libcudnn"), glob({"CUDNN_HOME", "CUDNN_PATH"}, "", false), glob({"CUDA_HOME", "CUDA_PATH"}, "", false),
        dlopen("libcudnn.so")}},
      {"cudnn",
       ">=1.11,<2.4",
       "v1.11 transformer_engine/common/__init__.py L48-79 (_load_cudnn; unchanged to v2.3)",
       {pip("nvidia/cudnn/lib", "libcudnn"), glob({"CUDNN_HOME", "CUDNN_PATH"}, "", false),
        glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", false), dlopen("libcudnn.so")}},
      {"cudnn",
       ">=2.4,<2.6",
       "v2.4 transformer_engine/common/__init__.py L255-279 (_load_cudnn; v2.5 L226-250)",
       {glob({"CUDNN_HOME", "CUDNN_PATH"}, "", false), glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", false),
        pip("nvidia/cudnn/lib", "lib"), dlopen("libcudnn.so")}},
      {"cudnn",
       ">=2.6,<2.10",
       "v2.6 transformer_engine/common/__init__.py L226-262 (_load_cudnn; v2.9 L282-318)",
       {glob({"CUDNN_HOME", "CUDNN_PATH"}, "", false), glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", false),
        pip("nvidia/cudnn/lib", "lib"), ldconfig("libcudnn.so"), dlopen("libcudnn.so")}},
      {"cudnn",
       ">=2.10,<2.11",
       "v2.10 transformer_engine/common/__init__.py L282-316 (_load_cudnn)",
       {glob({"CUDNN_HOME", "CUDNN_PATH"}, "", false), glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", false),
        pip("nvidia/cudnn/lib", "lib"), ldconfig("libcudnn"), dlopen("libcudnn.so")}},
      {"cudnn", ">=2.11",
       "v2.11 transformer_engine/common/__init__.py L257-352 (_load_cuda_library_from_python/_from_system/_load_cuda_library; v2.18 "
       "L259-354)",
       v211_steps("CUDNN", "cudnn")},

      {"nvrtc",
       ">=1.10,<1.11",
       "v1.10 transformer_engine/common/__init__.py L92-112 (_load_nvrtc)",
       {glob({"CUDA_HOME", "CUDA_PATH"}, "", true), ldconfig("libnvrtc", {"stub", "libnvrtc-builtins"}), dlopen("libnvrtc.so")}},
      {"nvrtc",
       ">=1.11,<2.4",
       "v1.11 transformer_engine/common/__init__.py L93-116 (_load_nvrtc; unchanged to v2.3)",
       {glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", true), ldconfig("libnvrtc", {"stub", "libnvrtc-builtins"}),
        dlopen("libnvrtc.so")}},
      {"nvrtc",
       ">=2.4,<2.6",
       "v2.4 transformer_engine/common/__init__.py L283-311 (_load_nvrtc)",
       {glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", true), pip("nvidia/cuda_nvrtc/lib", "lib"),
        ldconfig("libnvrtc", {"stub", "libnvrtc-builtins"}), dlopen("libnvrtc.so")}},
      {"nvrtc",
       ">=2.6,<2.10",
       "v2.6 transformer_engine/common/__init__.py L266-294 (_load_nvrtc; v2.9 L322-350)",
       {glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", true), pip("nvidia/cuda_nvrtc/lib", "lib"), ldconfig("libnvrtc.so"),
        dlopen("libnvrtc.so")}},
      {"nvrtc",
       ">=2.10,<2.11",
       "v2.10 transformer_engine/common/__init__.py L320-346 (_load_nvrtc)",
       {glob({"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", true), pip("nvidia/cuda_nvrtc/lib", "lib"), ldconfig("libnvrtc"),
        dlopen("libnvrtc.so")}},
      {"nvrtc", ">=2.11",
       "v2.11 transformer_engine/common/__init__.py L257-352 (_load_cuda_library_from_python/_from_system/_load_cuda_library; v2.18 "
       "L259-354)",
       v211_steps("NVRTC", "nvrtc")},

      {"curand", ">=2.11", "v2.11 transformer_engine/common/__init__.py L257-352 (_load_cuda_library; v2.18 L259-354)",
       v211_steps("CURAND", "curand")},

      {"cudart",
       ">=2.4,<2.11",
       "v2.4 transformer_engine/common/__init__.py L324 (_load_nvidia_cuda_library(\"cuda_runtime\"); to v2.10 L391)",
       {pip("nvidia/cuda_runtime/lib", "lib")}},
      {"cudart",
       ">=2.11",
       "v2.11 transformer_engine/common/__init__.py L374-378 (_load_cuda_library_from_python(\"cudart\"))",
       {pip("nvidia/cu13/cudart/lib", "lib"), pip("nvidia/cu13/lib", "libcudart"), pip("nvidia/cudart/lib", "lib"),
        pip("nvidia/cuda_cudart/lib", "lib")},
       true},
  };
  return table;
}

// cuBLAS: every lib*.so.*[0-9] of the wheel directory (libcublas, libcublasLt, libnvblas), so the
// same steps decide both libraries.
const std::vector<TeSearchRule>& cublas_rules() {
  static const std::vector<TeSearchRule> table = [] {
    std::vector<TeSearchRule> out;
    for (std::string_view library : {"cublas", "cublaslt"}) {
      out.push_back({library,
                     ">=2.4,<2.11",
                     "v2.4 transformer_engine/common/__init__.py L323 (_load_nvidia_cuda_library(\"cublas\"); to v2.10 L390)",
                     {pip("nvidia/cublas/lib", "lib")}});
      out.push_back({library,
                     ">=2.11",
                     "v2.11 transformer_engine/common/__init__.py L374-378 (_load_cuda_library_from_python(\"cublas\"))",
                     {pip("nvidia/cu13/cublas/lib", "lib"), pip("nvidia/cu13/lib", "libcublas"), pip("nvidia/cublas/lib", "lib"),
                      pip("nvidia/cuda_cublas/lib", "lib")},
                     true});
    }
    return out;
  }();
  return table;
}

const std::vector<TeSearchRule>& rules() {
  static const std::vector<TeSearchRule> all = [] {
    std::vector<TeSearchRule> out = base_rules();
    out.insert(out.end(), cublas_rules().begin(), cublas_rules().end());
    return out;
  }();
  return all;
}

std::string env_value(const TeContext& ctx, std::string_view var) {
  if (!ctx.env) return {};
  auto it = ctx.env->find(std::string(var));
  return it == ctx.env->end() ? std::string{} : it->second;
}

// The files under dir that TE's glob(f"{dir}/**/{stem}.so*", recursive=True) can return, in its
// order: a directory's own entries, then each subdirectory's; hidden names skipped, symlinked
// directories followed (each real directory once). Names are sorted: os.scandir's order is the
// filesystem's, sorting makes ours deterministic. Paths keep the names they were reached by.
// Every stem TE globs for starts with "lib", so only names "lib*.so*" are kept; readdir's d_type
// says what an entry is, so only symlinks (a directory behind one is followed) and entries of
// unknown type cost a lookup: on a CUDA toolkit (5,000 entries) that was two thirds of the walk.
bool may_match_glob(const std::string& name) { return util::starts_with(name, "lib") && name.find(".so") != std::string::npos; }

// What one walk may still spend (util::k_max_walk_depth, util::k_max_walk_entries) and whether
// it ran out.
struct WalkBudget {
  std::size_t entries = util::k_max_walk_entries;
  bool too_deep = false, too_many = false;
};

void walk(const std::filesystem::path& root, const std::string& named, const std::string& real, std::size_t depth, WalkBudget& budget,
          std::set<std::string>& visited, std::vector<std::string>& out) {
  if (!visited.insert(real).second) return;
  std::vector<std::pair<std::string, std::string>> subdirs;
  // `real` has no symlink in it (the walk's root was resolved, a subdirectory entry of a real
  // directory is real, a followed link is resolved): listed without resolving it again.
  NodeListing listing = node_list_real_directory(root, real);
  const auto& names = listing.names();
  if (names.size() > budget.entries) {
    budget.too_many = true;
    budget.entries = 0;
    return;
  }
  budget.entries -= names.size();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (name.empty() || name[0] == '.') continue;
    util::EntryType type = listing.type(i);
    if (type == util::EntryType::unknown) {
      struct stat st {};
      if (::lstat(host_path(root, real + "/" + name).c_str(), &st) != 0) continue;
      type = S_ISLNK(st.st_mode) ? util::EntryType::symlink : S_ISDIR(st.st_mode) ? util::EntryType::directory : util::EntryType::regular;
    }
    if (type == util::EntryType::symlink) {
      std::string real_path = real + "/" + name;
      auto target = resolve_node_path(root, real_path);
      if (target && node_file_type(root, target->real) == NodeFileType::directory) {
        subdirs.emplace_back(named + "/" + name, target->real.string());
        continue;
      }
      if (may_match_glob(name)) out.push_back(named + "/" + name); // a file, or a dangling link: glob lists both
    } else if (type == util::EntryType::directory) {
      subdirs.emplace_back(named + "/" + name, real + "/" + name);
    } else if (may_match_glob(name)) {
      out.push_back(named + "/" + name);
    }
  }
  if (!subdirs.empty() && depth >= util::k_max_walk_depth) {
    budget.too_deep = true;
    return;
  }
  for (const auto& [sub_named, sub_real] : subdirs) walk(root, sub_named, sub_real, depth + 1, budget, visited, out);
}

// The one-line error of a walk that stopped at a cap: the directory (and the tree it is in), the
// cap and its value, and the way past it.
std::string walk_cap_error(const std::filesystem::path& root, const std::string& dir, const WalkBudget& budget) {
  std::string where = dir + (root.empty() || root == "/" ? "" : " (under " + root.string() + ")");
  std::string what = budget.too_deep ? "directories nested " + util::past_cap("levels deep", util::k_max_walk_depth, "walk-depth cap")
                                     : util::past_cap("entries", util::k_max_walk_entries, "walk-entries cap");
  return where + ": TE's recursive library search of it meets " + what +
         "; remove or move that tree, or point the variable TE globs (CUDNN_HOME, CUDA_HOME, CUDA_PATH, ...) at the toolkit itself";
}

const std::vector<std::string>& library_files(const TeContext& ctx, const std::string& dir) {
  auto it = ctx.walks.find(dir);
  if (it == ctx.walks.end()) {
    TeWalk made;
    std::set<std::string> visited;
    WalkBudget budget;
    if (auto real = resolve_node_path(ctx.view.root, dir); real && node_file_type(ctx.view.root, real->real) == NodeFileType::directory) {
      walk(ctx.view.root, dir, real->real.string(), 0, budget, visited, made.files);
    }
    // Never silent, never a verdict on a partial walk: a library past a cap is one the model
    // does not see, so the command ends with the cap's error (exit 3).
    if (budget.too_deep || budget.too_many) {
      made.files.clear();
      made.cap = walk_cap_error(ctx.view.root, dir, budget);
    }
    it = ctx.walks.emplace(dir, std::move(made)).first;
  }
  if (!it->second.cap.empty() && std::find(ctx.caps_hit.begin(), ctx.caps_hit.end(), it->second.cap) == ctx.caps_hit.end())
    ctx.caps_hit.push_back(it->second.cap);
  return it->second.files;
}

ConsumerChoice make_choice(const std::filesystem::path& root, const std::string& path, std::string reason) {
  ConsumerChoice choice;
  choice.path = path;
  auto real = resolve_node_path(root, path);
  choice.real = real ? real->real.string() : path;
  choice.soname = util::path_file_name(path);
  choice.reason = std::move(reason);
  return choice;
}

// The directory a glob step searches: the first of its variables that is set, else its default;
// "" when neither. how says which, for the reason.
std::string glob_dir(const TeContext& ctx, const TeStep& step, std::string* how) {
  for (auto var : step.env_vars) {
    std::string dir = env_value(ctx, var);
    if (!dir.empty()) {
      if (how) *how = std::string(var) + "=" + dir;
      return dir;
    }
  }
  if (how) *how = std::string(step.default_dir);
  return std::string(step.default_dir);
}

std::optional<ConsumerChoice> run_glob(const TeContext& ctx, const TeStep& step, const LibrarySpec& spec, std::vector<std::string>& notes,
                                       util::Result<ConsumerChoice>* failure) {
  std::string how;
  std::string dir = glob_dir(ctx, step, &how);
  if (dir.empty()) {
    if (!step.env_vars.empty())
      notes.push_back(util::join(std::vector<std::string>(step.env_vars.begin(), step.env_vars.end()), "/") + " unset");
    return std::nullopt;
  }
  std::string prefix = std::string(spec.stem) + ".so";
  std::vector<std::string> found;
  for (const auto& path : library_files(ctx, normalize_node_path(dir).string())) {
    if (util::starts_with(util::path_file_name(path), prefix)) found.push_back(path);
  }
  std::erase_if(found, [&](const std::string& p) {
    return (step.skip_stub && p.find("stub") != std::string::npos) || p.find("libnvrtc-builtins") != std::string::npos;
  });
  if (found.empty()) {
    notes.push_back(how + " has no " + prefix + "*");
    return std::nullopt;
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const std::string& a, const std::string& b) { return util::path_file_name(a) > util::path_file_name(b); });
  const std::string& pick = found.front();
  if (!resolve_node_path(ctx.view.root, pick) || node_file_type(ctx.view.root, pick) != NodeFileType::regular) {
    *failure = util::Error{util::ErrorKind::not_found,
                           "TE's glob in " + how + " picks " + pick +
                               ", which does not resolve to a file: ctypes.CDLL fails and `import transformer_engine` raises"};
    return std::nullopt;
  }
  return make_choice(ctx.view.root, pick,
                     "recursive search of " + how + " (newest file name first" + std::string(step.skip_stub ? ", stubs skipped" : "") +
                         ")");
}

std::optional<ConsumerChoice> run_pip(const TeContext& ctx, const TeStep& step, const LibrarySpec& spec, std::vector<std::string>& notes,
                                      util::Result<ConsumerChoice>* failure) {
  if (ctx.purelib.empty()) return std::nullopt;
  std::string dir = ctx.purelib + "/" + std::string(step.dir);
  std::vector<std::string> ours;
  bool any = false;
  for (const auto& name : node_list_directory(ctx.view.root, dir)) {
    bool matches = util::starts_with(name, step.file_prefix) && name.find(".so.") != std::string::npos && !name.empty() &&
                   name.back() >= '0' && name.back() <= '9';
    if (!matches) continue;
    any = true;
    if (is_library_file(spec, name)) ours.push_back(name);
  }
  if (!any) {
    notes.push_back("no wheel files in " + dir);
    return std::nullopt;
  }
  if (ours.empty()) {
    notes.push_back("wheel directory " + dir + " loaded, but it has no " + std::string(spec.stem) + ".so.N");
    return std::nullopt;
  }
  std::sort(ours.begin(), ours.end());
  if (step.file_prefix == spec.stem && ours.size() > 1) {
    // TE <= 2.3 globs only its own library here and asserts there is exactly one.
    *failure =
        util::Error{util::ErrorKind::invalid, "TE asserts one " + std::string(spec.stem) + ".so.N in " + dir + " but finds " +
                                                  std::to_string(ours.size()) + ": `import transformer_engine` raises AssertionError"};
    return std::nullopt;
  }
  return make_choice(ctx.view.root, dir + "/" + ours.back(), "pip wheel directory " + dir);
}

std::optional<ConsumerChoice> run_ldconfig(const TeContext& ctx, const TeStep& step, const LibrarySpec& spec,
                                           std::vector<std::string>& notes) {
  if (!ctx.cache) {
    notes.emplace_back("no ld.so.cache");
    return std::nullopt;
  }
  for (const auto& entry : ctx.cache->entries) {
    std::string line = entry.soname + " => " + entry.path;
    if (line.find(step.needle) == std::string::npos) continue;
    bool excluded = false;
    for (auto ex : step.excludes) excluded = excluded || line.find(ex) != std::string::npos;
    if (excluded) continue;
    std::string reason = "first `ldconfig -p` line containing '" + std::string(step.needle) + "': " + entry.soname;
    if (is_library_file(spec, entry.soname)) return make_choice(ctx.view.root, entry.path, reason);
    // TE loads that sibling (libcudnn_ops.so.9, ...); the library itself then comes from the
    // same directory when libtransformer_engine.so's NEEDED is resolved: report that file.
    std::string dir = std::filesystem::path(entry.path).parent_path().string();
    for (const auto& name : node_list_directory(ctx.view.root, dir)) {
      if (is_library_file(spec, name) && !so_suffix(spec, name).empty() && so_suffix(spec, name).find('.') == std::string::npos) {
        return make_choice(ctx.view.root, dir + "/" + name, reason + " (a sibling library; " + name + " from its directory)");
      }
    }
    notes.push_back(reason + " is not " + std::string(spec.stem));
    return std::nullopt;
  }
  notes.push_back("no ld.so.cache entry contains '" + std::string(step.needle) + "'");
  return std::nullopt;
}

std::optional<ConsumerChoice> run_dlopen(const TeContext& ctx, const TeStep& step, std::vector<std::string>& notes) {
  auto found = resolve_needed(ctx.view, step.name, Requester{});
  if (!found) {
    notes.push_back("dlopen(\"" + std::string(step.name) + "\") fails: " + found.error().message);
    return std::nullopt;
  }
  return make_choice(ctx.view.root, found->path, "dlopen(\"" + std::string(step.name) + "\") via " + found->reason);
}

} // namespace

std::span<const TeSearchRule> te_search_rules() { return rules(); }

std::vector<std::string> te_glob_dirs(const TeContext& ctx, const std::optional<model::Version>& te_version) {
  std::set<std::string> dirs;
  for (const auto& rule : rules()) {
    if (te_version) {
      model::Version release{te_version->major(), te_version->minor(), te_version->patch()};
      auto range = model::VersionRange::parse(rule.versions);
      if (!range || !range->contains(release)) continue;
    }
    for (const auto& step : rule.steps) {
      if (step.kind != TeStepKind::glob) continue;
      if (std::string dir = glob_dir(ctx, step, nullptr); !dir.empty()) dirs.insert(normalize_node_path(dir).string());
    }
  }
  return {dirs.begin(), dirs.end()};
}

namespace {

// Lists ahead, breadth first on helper threads, the directories the walks of dirs will list, into
// the run's shared listings (node_list_real_directory's values, NodeFsMemo::share): each walk
// stays one depth-first pass whose result does not depend on who listed what, and finds most of
// its listings made. On the H200 node the CUDA toolkit's walk (350 directories, one after the
// other) ended about 7.5 ms into a probe with TE, after everything else the libraries probe does.
class ListingPrefetch {
public:
  ListingPrefetch(const std::filesystem::path& root, const std::vector<std::string>& dirs, unsigned threads) : m_root(root) {
    auto values = NodeFsMemo::share();
    if (!values || threads == 0) return;
    for (const auto& dir : dirs)
      if (auto real = resolve_node_path(root, dir)) push(real->real.string(), 0);
    for (unsigned t = 0; t < threads; ++t) {
      try {
        m_threads.emplace_back([this, values] {
          NodeFsMemo memo(values);
          // Only a prefetch: whatever goes wrong here, the walk lists (and reports) it itself.
          try {
            work();
          } catch (...) {
            stop();
          }
        });
      } catch (const std::system_error&) {
        break; // no more threads to be had: the walk lists the rest itself
      }
    }
  }
  ~ListingPrefetch() {
    stop();
    for (auto& t : m_threads) t.join();
  }
  ListingPrefetch(const ListingPrefetch&) = delete;
  ListingPrefetch& operator=(const ListingPrefetch&) = delete;

private:
  // The walk goes util::k_max_walk_depth levels down at most; so does this.
  void push(std::string real, std::size_t depth) {
    if (depth <= util::k_max_walk_depth && m_seen.insert(real).second) m_queue.emplace_back(std::move(real), depth);
  }
  void stop() {
    std::lock_guard lock(m_mutex);
    m_stopped = true;
    m_changed.notify_all();
  }
  void work() {
    for (;;) {
      std::string dir;
      std::size_t depth = 0;
      {
        std::unique_lock lock(m_mutex);
        m_changed.wait(lock, [&] { return m_stopped || !m_queue.empty() || m_busy == 0; });
        if (m_stopped || m_queue.empty()) {
          m_stopped = true; // nothing left and nobody listing: done
          m_changed.notify_all();
          return;
        }
        std::tie(dir, depth) = std::move(m_queue.front());
        m_queue.pop_front();
        ++m_busy;
      }
      NodeListing listing = node_list_real_directory(m_root, dir);
      std::vector<std::string> subdirs;
      for (std::size_t i = 0; i < listing.size(); ++i) {
        const std::string& name = listing.names()[i];
        if (name.empty() || name[0] == '.') continue;
        util::EntryType type = listing.type(i);
        if (type == util::EntryType::directory) subdirs.push_back(dir + "/" + name);
        else if (type == util::EntryType::symlink || type == util::EntryType::unknown) {
          auto target = resolve_node_path(m_root, dir + "/" + name);
          if (target && node_file_type(m_root, target->real) == NodeFileType::directory) subdirs.push_back(target->real.string());
        }
      }
      std::lock_guard lock(m_mutex);
      --m_busy;
      m_entries += listing.size();
      if (m_entries > util::k_max_walk_entries) m_stopped = true; // the walk stops at its cap too
      for (auto& sub : subdirs) push(std::move(sub), depth + 1);
      m_changed.notify_all();
    }
  }

  std::filesystem::path m_root;
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::deque<std::pair<std::string, std::size_t>> m_queue; // real directory, depth
  std::set<std::string> m_seen;
  std::size_t m_busy = 0, m_entries = 0;
  bool m_stopped = false;
  std::vector<std::thread> m_threads;
};

} // namespace

TeWalks te_walk_dirs(const std::filesystem::path& root, const std::vector<std::string>& dirs, std::optional<unsigned> prefetch_threads) {
  TeContext ctx;
  ctx.view.root = root;
  // Two helpers where the machine has cores beyond the probe's own threads (none on two).
  unsigned cpus = util::available_cpus();
  ListingPrefetch prefetch(root, dirs, prefetch_threads.value_or(cpus > 2 ? std::min(cpus - 2, 2u) : 0u));
  for (const auto& dir : dirs) (void)library_files(ctx, dir);
  return std::move(ctx.walks);
}

const TeSearchRule* find_te_rule(std::string_view library, const model::Version& te_version) {
  // Development builds (2.11.0.dev0+abc) follow the release they lead to.
  model::Version release{te_version.major(), te_version.minor(), te_version.patch()};
  for (const auto& rule : rules()) {
    if (rule.library != library) continue;
    auto range = model::VersionRange::parse(rule.versions);
    if (range && range->contains(release)) return &rule;
  }
  return nullptr;
}

util::Result<ConsumerChoice> te_search(const TeContext& ctx, const model::Version& te_version, const LibrarySpec& spec) {
  const TeSearchRule* rule = find_te_rule(spec.key, te_version);
  if (!rule) {
    return util::Error{util::ErrorKind::unsupported, "TE " + te_version.to_string() + " does not search for " + std::string(spec.key) +
                                                         " itself (or the release is not modelled)"};
  }
  if (rule->wheel_only_without_ctk) {
    // TE v2.11+ loads the wheel cudart and cuBLAS only when neither NVRTC nor cuRAND came from
    // the system.
    for (std::string_view other : {"nvrtc", "curand"}) {
      LibrarySpec other_spec{other, other == "nvrtc" ? "libnvrtc" : "libcurand", "", std::nullopt};
      if (auto sub = te_search(ctx, te_version, other_spec); sub && sub->reason.find("pip wheel") == std::string::npos) {
        return util::Error{util::ErrorKind::not_found, "TE " + te_version.to_string() + " found a system " + std::string(other) +
                                                           " and so loads no " + std::string(spec.key) + " itself (" +
                                                           std::string(rule->citation) + ")"};
      }
    }
  }
  std::vector<std::string> notes;
  util::Result<ConsumerChoice> failure = util::Error{util::ErrorKind::not_found, ""};
  for (const auto& step : rule->steps) {
    std::optional<ConsumerChoice> choice;
    switch (step.kind) {
    case TeStepKind::glob: choice = run_glob(ctx, step, spec, notes, &failure); break;
    case TeStepKind::pip: choice = run_pip(ctx, step, spec, notes, &failure); break;
    case TeStepKind::ldconfig: choice = run_ldconfig(ctx, step, spec, notes); break;
    case TeStepKind::dlopen: choice = run_dlopen(ctx, step, notes); break;
    }
    if (!failure.ok() && !failure.error().message.empty()) return failure;
    if (choice) {
      choice->reason = "TE " + te_version.to_string() + " search (" + std::string(rule->citation) + "): " + choice->reason;
      if (!notes.empty()) choice->reason += "; before that: " + util::join(notes, ", ");
      return *choice;
    }
  }
  return util::Error{util::ErrorKind::not_found, "TE " + te_version.to_string() + " finds no " + std::string(spec.stem) + " (" +
                                                     std::string(rule->citation) + "): " + util::join(notes, ", ")};
}

std::optional<std::string> te_core_library(const std::filesystem::path& root, const std::string& te_dir) {
  std::string parent = std::filesystem::path(te_dir).parent_path().string();
  for (const auto& candidate :
       {te_dir + "/libtransformer_engine.so", te_dir + "/wheel_lib/libtransformer_engine.so", parent + "/libtransformer_engine.so"}) {
    if (node_file_type(root, candidate) == NodeFileType::regular) return candidate;
  }
  return std::nullopt;
}

util::Result<std::string> te_shared_object(const std::filesystem::path& root, const std::string& te_dir, const std::string& purelib,
                                           std::string_view prefix) {
  // v2.15 transformer_engine/common/__init__.py L59-130 (_find_shared_object_in_te_dir,
  // _get_shared_object_file): the imported package's parent first, then purelib.
  std::vector<std::string> tops{std::filesystem::path(te_dir).parent_path().string()};
  if (!purelib.empty() && purelib != tops.front()) tops.push_back(purelib);
  for (const auto& top : tops) {
    if (node_file_type(root, top + "/transformer_engine") != NodeFileType::directory) continue;
    std::vector<std::string> files;
    for (const auto& dir : {top, top + "/transformer_engine", top + "/transformer_engine/wheel_lib"}) {
      for (const auto& name : node_list_directory(root, dir)) {
        if (util::starts_with(name, prefix) && std::filesystem::path(name).extension() == ".so") files.push_back(dir + "/" + name);
      }
    }
    if (files.size() == 1) return files.front();
    if (files.size() > 1) {
      return util::Error{util::ErrorKind::invalid, "TE finds " + std::to_string(files.size()) + " " + std::string(prefix) + "*.so files (" +
                                                       util::join(files, ", ") + ") and raises \"Multiple files found\""};
    }
  }
  return util::Error{util::ErrorKind::not_found, "no " + std::string(prefix) + "*.so in " + util::join(tops, " or ") +
                                                     " (nor transformer_engine/, transformer_engine/wheel_lib/ there): TE raises "
                                                     "FileNotFoundError \"Could not find shared object file\""};
}

} // namespace probe
