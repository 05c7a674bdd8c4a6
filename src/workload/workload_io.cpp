// Workload importers. YAML and JSON workload files go through yaml-cpp (JSON is read as YAML
// flow style), so every error can point at file:line:column from the node's mark; yaml-cpp
// reports failures by exception, which is caught here and turned into a Result.
#include "workload/workload_io.hpp"

#include "util/edit_distance.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/yaml_load.hpp"
#include "util/strings.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

namespace workload {

namespace {

constexpr std::string_view k_name_key = "name";

util::Error parse_error(std::string message) { return util::Error{util::ErrorKind::parse, std::move(message)}; }
util::Error invalid_error(std::string message) { return util::Error{util::ErrorKind::invalid, std::move(message)}; }

// "source:line:column: " for a yaml-cpp mark (0-based line and column; -1 when unknown).
std::string mark_prefix(std::string_view source, const YAML::Mark& mark) {
  std::string prefix(source);
  if (mark.line >= 0) prefix += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  return prefix + ": ";
}

std::string unknown_key_message(std::string_view key) {
  std::string message = "unknown workload key '" + std::string(key) + "'";
  if (auto hint = suggest_workload_key(key); !hint.empty()) message += " (did you mean '" + hint + "'?)";
  return message;
}

// The text of a workload value: a scalar as written, or a two-element sequence for window_size.
util::Result<std::string> value_text(const std::string& key, const YAML::Node& node, std::string_view source) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence() && key == "window_size" && node.size() == 2 && node[0].IsScalar() && node[1].IsScalar())
    return node[0].Scalar() + "," + node[1].Scalar();
  if (node.IsNull()) return parse_error(mark_prefix(source, node.Mark()) + "workload key " + key + " has no value");
  return parse_error(mark_prefix(source, node.Mark()) + "workload key " + key + " must be a single value" +
                     (key == "window_size" ? " or a [LEFT, RIGHT] pair" : ""));
}

util::Result<model::Workload> workload_from_node(const YAML::Node& node, std::string_view source) {
  if (!node.IsMap()) return parse_error(mark_prefix(source, node.Mark()) + "a workload must be a mapping of key: value");
  model::Workload workload;
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : node) {
    const YAML::Node& key_node = entry.first;
    if (!key_node.IsScalar()) return parse_error(mark_prefix(source, key_node.Mark()) + "a workload key must be a word");
    const std::string key = key_node.Scalar();
    if (!seen.insert(key).second) return parse_error(mark_prefix(source, key_node.Mark()) + "workload key '" + key + "' is given twice");
    if (key == k_name_key) {
      auto text = NVTE_TRY(value_text(key, entry.second, source));
      workload.name = text;
      continue;
    }
    if (!model::find_workload_key(key)) return parse_error(mark_prefix(source, key_node.Mark()) + unknown_key_message(key));
    auto text = NVTE_TRY(value_text(key, entry.second, source));
    if (auto set = workload.set_text(key, text); !set)
      return util::Error{set.error().kind, mark_prefix(source, entry.second.Mark()) + set.error().message};
  }
  return workload;
}

util::Result<std::vector<model::Workload>> workloads_from_root(const YAML::Node& root, std::string_view source) {
  std::vector<model::Workload> workloads;
  if (!root.IsDefined() || root.IsNull()) return parse_error(std::string(source) + ": no workload in the file");
  if (root.IsMap() && root["workloads"]) {
    if (root.size() != 1) {
      for (const auto& entry : root) {
        if (entry.first.Scalar() != "workloads")
          return parse_error(mark_prefix(source, entry.first.Mark()) + "a file with 'workloads:' holds nothing else; '" +
                             entry.first.Scalar() + "' belongs inside a workload");
      }
    }
    const YAML::Node list = root["workloads"];
    if (!list.IsSequence() || list.size() == 0)
      return parse_error(mark_prefix(source, list.Mark()) + "'workloads' must be a non-empty list of workloads");
    for (const auto& item : list) workloads.push_back(NVTE_TRY(workload_from_node(item, source)));
    return workloads;
  }
  workloads.push_back(NVTE_TRY(workload_from_node(root, source)));
  return workloads;
}

} // namespace

std::string suggest_workload_key(std::string_view unknown) {
  std::string best;
  std::size_t best_distance = 0;
  const std::size_t limit = std::max<std::size_t>(2, unknown.size() / 3);
  const std::string lower = util::to_lower(unknown);
  auto consider = [&](std::string_view candidate) {
    std::size_t distance = util::edit_distance(lower, candidate, limit);
    // A key that starts with the unknown word ("head_dim" -> "head_dim_qk") is a good hint too.
    if (candidate.size() > unknown.size() && util::starts_with(candidate, unknown)) distance = std::min<std::size_t>(distance, 2);
    if (best.empty() || distance < best_distance) {
      best = std::string(candidate);
      best_distance = distance;
    }
  };
  for (const auto& spec : model::workload_keys()) consider(spec.name);
  consider(k_name_key);
  return best_distance <= limit ? best : std::string();
}

util::Result<std::vector<model::Workload>> parse_workload_text(std::string_view text, std::string_view source) {
  YAML::Node root = NVTE_TRY(util::load_yaml(text, source)); // depth, aliases, one document, as both parsers read it
  try {
    return workloads_from_root(root, source);
  } catch (const YAML::Exception& e) {
    return util::yaml_cpp_error(source, e);
  }
}

util::Result<std::vector<model::Workload>> load_workload_file(const std::filesystem::path& path) {
  auto text = NVTE_TRY(util::read_file(path, 4u << 20));
  auto workloads = NVTE_TRY(parse_workload_text(text, path.string()));
  const std::string stem = path.stem().string();
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (!workloads[i].name.empty()) continue;
    workloads[i].name = workloads.size() == 1 ? stem : stem + "[" + std::to_string(i) + "]";
  }
  return workloads;
}

util::Result<void> apply_workload_settings(model::Workload& workload, std::span<const std::string> settings) {
  for (const auto& setting : settings) {
    auto eq = setting.find('=');
    if (eq == std::string::npos)
      return invalid_error("--workload-set '" + setting + "': expected KEY=VALUE");
    std::string key(util::trim(std::string_view(setting).substr(0, eq)));
    std::string value(util::trim(std::string_view(setting).substr(eq + 1)));
    if (key == k_name_key) {
      workload.name = value;
      continue;
    }
    if (!model::find_workload_key(key)) return invalid_error("--workload-set '" + setting + "': " + unknown_key_message(key));
    // Importers write both halves of a pair (K/V length, V head dim); where the two are equal
    // (self-attention, not MLA) the second follows the first unless the settings name it too.
    std::string follower = key == "max_seqlen_q" ? "max_seqlen_kv" : key == "head_dim_qk" ? "head_dim_v" : "";
    const model::Value* lead = follower.empty() ? nullptr : workload.get(key);
    const model::Value* second = follower.empty() ? nullptr : workload.get(follower);
    bool kv_follows = lead && second && lead->to_string() == second->to_string() &&
                      std::none_of(settings.begin(), settings.end(), [&](const std::string& s) {
                        return util::trim(std::string_view(s).substr(0, s.find('='))) == follower;
                      });
    if (auto set = workload.set_text(key, value); !set)
      return util::Error{set.error().kind, "--workload-set '" + setting + "': " + set.error().message};
    std::erase(workload.assumed, key);
    if (kv_follows) {
      NVTE_TRY_VOID(workload.set_text(follower, value));
      std::erase(workload.assumed, follower);
    }
    // window_size also sets its two halves; they are no longer assumed either.
    if (key == "window_size") {
      std::erase(workload.assumed, std::string("window_size_left"));
      std::erase(workload.assumed, std::string("window_size_right"));
    }
  }
  return {};
}

util::Result<void> finish_workload(model::Workload& workload) {
  if (auto done = workload.complete(); !done) {
    std::string name = workload.name.empty() ? std::string("workload") : workload.name;
    return util::Error{done.error().kind, name + ": " + done.error().message};
  }
  return {};
}

} // namespace workload
