// Requires-Dist closure (requirements.hpp). One pass over sys.path's directories reads the
// METADATA of just the distributions some root requires (a torch venv holds ~200; the closure
// needs ~30), first on sys.path wins, as importlib.metadata finds them.
#include "probe/requirements.hpp"

#include "probe/pep440.hpp"
#include "probe/probe.hpp"
#include "util/strings.hpp"

#include <map>
#include <set>

namespace probe {

namespace {

struct Root {
  std::string_view fact_prefix;
  bool (*matches)(const std::string& normalized);
};

const Root k_roots[] = {
    {"te", [](const std::string& n) { return util::starts_with(n, "transformer_engine"); }},
    {"torch", [](const std::string& n) { return n == "torch"; }},
    {"flash_attn", [](const std::string& n) { return n == "flash_attn"; }},
    {"flash_attn_3", [](const std::string& n) { return n == "flash_attn_3" || n == "flashattn_hopper"; }},
    {"flash_attn_4", [](const std::string& n) { return n == "flash_attn_4"; }},
};

// TE's metapackage offers one core per CUDA major as alternative extras (v2.15 setup.py L201-205).
constexpr std::string_view k_core_extras[] = {"core", "core_cu12", "core_cu13"};

bool met(const Requirement& r, const std::map<std::string, std::string>& installed, std::optional<std::string>& found) {
  auto it = installed.find(r.normalized);
  if (it == installed.end()) return false;
  found = it->second;
  if (r.specifier.empty()) return true;
  // An unreadable specifier or version ("2.1-custom") is not claimed unmet.
  return pep440::satisfies(it->second, r.specifier).value_or(true);
}

} // namespace

RequirementCheck check_requirements(const std::vector<const Distribution*>& dists, const std::map<std::string, std::string>& installed,
                                    const pep508::MarkerEnvironment& env, const ExtraContext& extras) {
  RequirementCheck out;
  std::vector<std::string> active;
  if (extras.torch) active.push_back("pytorch");
  if (extras.jax) active.push_back("jax");
  std::set<std::string> reported;
  auto report = [&](const Requirement& r, const Distribution& d, const std::string& extra) {
    std::optional<std::string> found;
    if (met(r, installed, found)) return;
    if (!reported.insert(r.text()).second) return; // pydantic in two TE distributions
    out.unmet.push_back({r, d.name, extra, found});
  };
  for (const Distribution* d : dists) {
    std::map<std::string, std::vector<Requirement>> core; // core extra -> its requirements
    for (const auto& text : d->requires_dist) {
      auto r = parse_requirement(text);
      if (!r) {
        out.problems.push_back(d->metadata_path + ": unreadable Requires-Dist '" + text + "'");
        continue;
      }
      if (r->marker.empty()) {
        report(*r, *d, "");
        continue;
      }
      // A marker reads the same for every extra: an unreadable one is reported once.
      auto bare = pep508::evaluate(r->marker, env, "");
      if (!bare) {
        out.problems.push_back(d->metadata_path + ": " + bare.error().message);
        continue;
      }
      if (*bare == true) {
        report(*r, *d, "");
        continue;
      }
      auto applies = [&](std::string_view extra) {
        auto v = pep508::evaluate(r->marker, env, extra);
        return v.ok() && *v == true;
      };
      bool done = false;
      for (const auto& extra : active) {
        if (applies(extra)) {
          report(*r, *d, extra);
          done = true;
          break;
        }
      }
      if (done || !util::starts_with(d->normalized, "transformer_engine")) continue;
      for (auto extra : k_core_extras) {
        if (applies(extra)) core[std::string(extra)].push_back(*r);
      }
    }
    if (core.empty()) continue;
    // One installed core meets the group; else the core for the node's CUDA major is missing.
    bool any_met = false;
    for (const auto& [extra, reqs] : core) {
      bool all = true;
      for (const auto& r : reqs) {
        std::optional<std::string> found;
        all = all && met(r, installed, found);
      }
      any_met = any_met || all;
    }
    if (any_met) continue;
    std::string pick = extras.cuda_major ? "core_cu" + std::to_string(*extras.cuda_major) : std::string("core");
    if (!core.count(pick)) pick = core.count("core") ? "core" : core.begin()->first;
    for (const auto& r : core[pick]) report(r, *d, pick);
  }
  return out;
}

void record_requirements(const Host& host, const Interpreter& it, const std::vector<Distribution>& packages, model::Facts& facts,
                         std::vector<std::string>& problems) {
  std::map<std::string_view, std::vector<const Distribution*>> roots;
  std::set<std::string> names;
  bool torch = false, jax = false;
  for (const auto& d : packages) {
    torch = torch || d.normalized == "torch";
    jax = jax || d.normalized == "jax" || d.normalized == "jaxlib";
    for (const auto& root : k_roots) {
      if (!root.matches(d.normalized)) continue;
      roots[root.fact_prefix].push_back(&d);
      for (const auto& text : d.requires_dist) {
        if (auto r = parse_requirement(text)) names.insert(r->normalized);
      }
    }
  }
  for (const auto& root : k_roots) facts.erase_prefix(std::string(root.fact_prefix) + ".requirements");
  if (roots.empty()) return;

  std::map<std::string, std::string> installed; // normalized name -> version, the first on sys.path
  for (const auto& dir : it.package_dirs()) {
    SiteScan scan = scan_site_packages(host.root, dir, {}, [&](const std::string& n) { return names.count(n) > 0; });
    for (auto& d : scan.distributions) installed.emplace(d.normalized, d.version);
  }

  auto python_version = facts.get_string("python.version").value_or("");
  auto env = pep508::linux_cpython_environment(python_version, facts.get_string("system.arch").value_or(""),
                                               facts.get_string("system.kernel").value_or(""));
  ExtraContext extras{torch, jax, std::nullopt};
  if (auto major = facts.get_int("te.cuda_major")) extras.cuda_major = *major;
  else if (auto cuda = facts.get_version("torch.cuda_version")) extras.cuda_major = cuda->major();

  for (const auto& [prefix, dists] : roots) {
    RequirementCheck check = check_requirements(dists, installed, env, extras);
    for (auto& p : check.problems) problems.push_back(std::move(p));
    std::string base = std::string(prefix) + ".requirements";
    for (std::size_t i = 0; i < check.unmet.size(); ++i) {
      const auto& u = check.unmet[i];
      std::string item = base + ".missing[" + std::to_string(i) + "]";
      facts.set(item + ".requirement", u.requirement.text());
      facts.set(item + ".name", u.requirement.normalized);
      facts.set(item + ".required_by", u.required_by);
      if (!u.extra.empty()) facts.set(item + ".extra", u.extra);
      if (u.found_version) facts.set(item + ".found_version", *u.found_version);
    }
    facts.set(base + ".missing_count", static_cast<long>(check.unmet.size()));
  }
}

} // namespace probe
