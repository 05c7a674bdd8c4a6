// The Python tier's answer kept and reused (python_reuse.hpp). The payload is a JSON object:
// {"ran_at": seconds since the epoch, "paths": [...], "identities": [...] (one per path),
// "result": {...}}; the key (interpreter, script, shapes, environment, GPUs, driver) is
// KernelCache's, stored whole and compared.
#include "selftest/python_reuse.hpp"

#include "util/file_cache.hpp"
#include "util/input_guard.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sys/stat.h>

namespace selftest {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view k_kind = "python-tier";

// util::identity_text of what path names (links followed), or "missing".
std::string identity_of(const std::string& path, bool* regular_file = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  if (regular_file) *regular_file = S_ISREG(st.st_mode);
  return util::identity_text(util::file_identity(st));
}

std::int64_t epoch_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

util::Error invalid(std::string why) { return util::Error{util::ErrorKind::invalid, std::move(why)}; }

} // namespace

bool python_tier_reads(std::string_view name) {
  static constexpr std::string_view k_prefixes[] = {"NV",  "CUDA", "CUDNN", "NCCL",   "CUBLAS", "TORCH", "PYTORCH", "PYTHON",
                                                    "LD_", "JAX",  "XLA",   "TRITON", "OMP_",   "MKL",   "KMP_",    "CONDA"};
  if (name == "PATH" || name == "HOME" || name == "VIRTUAL_ENV") return true;
  return std::any_of(std::begin(k_prefixes), std::end(k_prefixes), [&](std::string_view p) { return name.starts_with(p); });
}

CacheKey python_tier_key(const std::string& interpreter, const std::string& script, const Json& shapes,
                         const std::map<std::string, std::string>& environment, const model::Facts& facts) {
  CacheKey key;
  key.add("doctor", NVTE_VERSION_STRING);
  key.add("interpreter", interpreter);
  key.add("script", script + " " + identity_of(script));
  key.add("shapes", util::json_text(shapes));
  for (const auto& [name, value] : environment)
    if (python_tier_reads(name)) key.add("env " + name, value);
  key.add("driver", facts.get_string("driver.version").value_or("?"));
  key.add("kernel module", facts.get_string("driver.kernel_module").value_or("?"));
  const std::int64_t gpus = facts.get_int("gpu.count").value_or(0);
  for (std::int64_t i = 0; i < gpus && i < 64; ++i) {
    std::string base = "gpu[" + std::to_string(i) + "].";
    key.add(base + "uuid", facts.get_string(base + "uuid").value_or("?"));
    key.add(base + "name", facts.get_string(base + "name").value_or("?"));
  }
  return key;
}

util::Result<Json> recall_python_tier(const PythonReuse& reuse, const CacheKey& key) {
  if (reuse.fresh) return util::Error{util::ErrorKind::not_found, "--fresh"};
  auto payload = reuse.cache.load(k_kind, key);
  if (!payload) return payload.take_error();
  auto parsed = util::parse_json<Json>(*payload, reuse.cache.directory() + "/" + key.file_name(k_kind));
  if (!parsed) return invalid(parsed.error().message);
  const Json& kept = *parsed;
  if (!kept.is_object() || !kept.contains("ran_at") || !kept["ran_at"].is_number_integer() || !kept.contains("paths") ||
      !kept["paths"].is_array() || !kept.contains("identities") || !kept["identities"].is_array() || !kept.contains("result") ||
      !kept["result"].is_object())
    return invalid("the kept answer is not one this doctor wrote");
  const std::int64_t ran_at = kept["ran_at"].get<std::int64_t>();
  const std::int64_t age = epoch_seconds(reuse.now()) - ran_at;
  if (age < 0 || age > reuse.max_age.count())
    return invalid("the kept answer is " + std::to_string(age) + " s old (reused for at most " + std::to_string(reuse.max_age.count()) +
                   " s)");
  const Json& paths = kept["paths"];
  const Json& identities = kept["identities"];
  if (paths.size() != identities.size()) return invalid("the kept answer is not one this doctor wrote");
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!paths[i].is_string() || !identities[i].is_string()) return invalid("the kept answer is not one this doctor wrote");
    const std::string& path = paths[i].get_ref<const std::string&>();
    const std::string now = identity_of(path);
    const std::string& then = identities[i].get_ref<const std::string&>();
    if (now == then) continue;
    return invalid(path + (then == "missing" ? " appeared" : now == "missing" ? " is gone" : " changed") + " since the tier ran");
  }
  Json result = kept["result"];
  result["reused"] = Json{{"ran_at", util::rfc3339(ran_at)}, {"age_seconds", age}, {"files", paths.size()}};
  return result;
}

util::Result<void> remember_python_tier(const PythonReuse& reuse, const CacheKey& key, const Json& result, const Json& loaded) {
  if (!result.is_object() || result.value("status", "") != "ok") return invalid("only an ok answer is kept");
  if (!loaded.is_array() || loaded.empty()) return invalid("the tier listed no files it loaded");
  if (loaded.size() > util::k_max_walk_entries) return invalid(util::past_cap("files", util::k_max_walk_entries, "walk-entries cap"));
  // Each path, and the directory holding each file: a module or library added beside one (a new
  // flash-attn in site-packages, a second cuDNN in its lib/) changes what TE finds. Not the
  // directory above a directory (sys.path's entries): /tmp above a PYTHONPATH entry changes
  // all the time and holds nothing the tier reads.
  std::map<std::string, std::string> identities;
  auto add = [&](const std::string& path) {
    bool regular = false;
    auto [it, added] = identities.try_emplace(path);
    if (!added) return false;
    it->second = identity_of(path, &regular);
    return regular;
  };
  for (const auto& p : loaded) {
    if (!p.is_string()) continue;
    std::filesystem::path path(p.get<std::string>());
    if (!path.is_absolute()) continue;
    if (add(path.lexically_normal().string()) && path.has_parent_path()) add(path.parent_path().lexically_normal().string());
  }
  add("/etc/ld.so.cache");
  Json paths = Json::array(), ids = Json::array();
  for (const auto& [path, id] : identities) {
    paths.push_back(path);
    ids.push_back(id);
  }
  Json kept{{"ran_at", epoch_seconds(reuse.now())}, {"paths", std::move(paths)}, {"identities", std::move(ids)}, {"result", result}};
  return reuse.cache.store(k_kind, key, util::json_text(kept));
}

} // namespace selftest
