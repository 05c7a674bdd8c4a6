#include "probe/image_env.hpp"

#include "util/input_guard.hpp"

#include <nlohmann/json.hpp>

namespace probe {

namespace {

using json = nlohmann::json;

// The PATH runc and containerd give a process whose image sets none.
constexpr const char* k_default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const json* env_list(const json& doc) {
  if (!doc.is_object()) return nullptr;
  if (auto process = doc.find("process"); process != doc.end() && process->is_object()) { // runtime spec
    if (auto env = process->find("env"); env != process->end() && env->is_array()) return &*env;
  }
  if (auto config = doc.find("config"); config != doc.end() && config->is_object()) { // image config
    if (auto env = config->find("Env"); env != config->end() && env->is_array()) return &*env;
  }
  return nullptr;
}

} // namespace

util::Result<ImageEnvironment> read_image_environment(const std::filesystem::path& config) {
  auto text = util::read_input(config);
  if (!text) return text.take_error();
  auto doc = util::parse_json<json>(*text, config.string());
  if (!doc) return doc.take_error();
  const json* list = env_list(*doc);
  if (!list)
    return util::Error{util::ErrorKind::parse,
                       config.string() + ": neither an OCI runtime config (process.env) nor an OCI image config (config.Env)"};
  ImageEnvironment out;
  out.source = config.string();
  for (const auto& item : *list) {
    if (!item.is_string()) return util::Error{util::ErrorKind::parse, config.string() + ": an environment entry is not a string"};
    auto entry = item.get<std::string>();
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue; // not KEY=VALUE: a runtime would drop it too
    out.env.insert_or_assign(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return out;
}

util::Result<ImageEnvironment> image_environment(const std::filesystem::path& root, const std::optional<std::filesystem::path>& config) {
  if (config) return read_image_environment(*config);
  std::error_code ec;
  auto dir = root.lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path(); // "bundle/rootfs/"
  auto beside = dir.parent_path() / "config.json";
  // umoci's bundle layout; a config.json there that does not parse is an error, not a silent default.
  if (dir.filename() == "rootfs" && std::filesystem::is_regular_file(beside, ec)) return read_image_environment(beside);
  ImageEnvironment fallback;
  fallback.env["PATH"] = k_default_path;
  fallback.source = "default";
  return fallback;
}

} // namespace probe
