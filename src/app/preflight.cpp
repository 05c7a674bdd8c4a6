#include "app/preflight.hpp"

#include "model/fact_origin.hpp"
#include "probe/image_env.hpp"
#include "probe/probe.hpp"
#include "util/input_guard.hpp"
#include "util/logging.hpp"

#include <string>
#include <vector>

namespace app {

namespace {

// The probes that read an image's userspace. The GPU and driver probes are left out: an
// unpacked image has no /proc/driver/nvidia or /sys of its own, and what they would find belongs
// to the node anyway.
const std::vector<std::string> k_image_probes = {"env", "system", "python", "libraries"};

model::Facts node_from_file(const std::filesystem::path& file) {
  auto text = util::read_input(file);
  if (!text) throw util::Fatal{text.error().message};
  auto loaded = model::Facts::from_json(*text, file.string());
  if (!loaded) throw util::Fatal{loaded.error().message};
  if (!loaded->has("driver.version") && loaded->count("gpu") == 0)
    throw util::Fatal{file.string() + ": no GPU or driver facts (expected a probe snapshot or report of a GPU node)"};
  return std::move(*loaded);
}

std::filesystem::path canonical_or_absolute(const std::filesystem::path& path) {
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? std::filesystem::absolute(path) : canonical;
}

} // namespace

model::Facts load_preflight_facts(const Options& options, const std::function<void()>& overlap) {
  if (options.facts_file)
    throw util::Fatal{"--facts replays a whole node; a preflight takes only the node's part: use --node-facts or --node-root instead"};
  if (options.node_facts_file && options.node_root) throw util::Fatal{"--node-facts and --node-root both name the node: give one"};

  const auto image_root = canonical_or_absolute(options.root);
  const bool in_the_image = image_root == "/" && !options.image_config; // the doctor runs inside the job's container
  probe::Host image = probe::Host::current();
  image.root = image_root;
  if (options.python && !options.python->empty()) image.python = options.python;
  image.deep = options.deep;
  std::string env_source = "process";
  // Read from outside, the image is examined, never run (probe/tree_policy.hpp): its tree, and at
  // "/" the directories its environment names.
  image.image_environment = !in_the_image;
  if (!in_the_image) {
    auto env = probe::image_environment(image_root, options.image_config);
    if (!env) throw util::Fatal{env.error().message};
    image.env = std::move(env->env);
    env_source = env->source;
  }

  model::Facts node;
  std::string node_source;
  model::Facts image_facts;
  if (options.node_facts_file) {
    node = node_from_file(*options.node_facts_file);
    node_source = options.node_facts_file->string();
    image_facts = probe::probe_node(image, k_image_probes, overlap);
  } else {
    const auto node_root = canonical_or_absolute(*options.node_root);
    node_source = "probed:" + node_root.string();
    if (node_root == image_root && in_the_image) {
      // Inside a GPU pod the node's GPUs, driver and injected libcuda are visible from the job's
      // own tree: one probe serves both sides.
      image_facts = probe::probe_node(image, {}, overlap);
      node = image_facts;
    } else {
      probe::Host host = probe::Host::current();
      host.root = node_root;
      host.deep = options.deep;
      image_facts = probe::probe_node(image, k_image_probes, overlap);
      node = probe::probe_node(host);
    }
  }

  model::Facts facts = model::combine_image_and_node(image_facts, node);
  const std::string node_name = node.get_string("system.hostname").value_or("unknown");
  facts.set("preflight.image", options.image_name.empty() ? image_root.string() : options.image_name);
  facts.set("preflight.image_root", image_root.string());
  facts.set("preflight.image_env", env_source);
  facts.set("preflight.node", node_name);
  facts.set("preflight.node_facts", node_source);
  util::log::debug("preflight of " + facts.get_string("preflight.image").value_or("") + " on " + node_name);
  return facts;
}

} // namespace app
