#include "probe/relink.hpp"

#include "probe/import_order.hpp"
#include "probe/te_load_order.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <filesystem>

namespace probe {

namespace {

struct Copy {
  std::string path;
  model::Version version;
  std::string source;
};

bool under(const std::string& path, const std::string& dir) {
  return !dir.empty() && path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

const Copy* te_pick(const model::Facts& facts, const std::vector<Copy>& copies, std::string_view library) {
  auto te = facts.get_version("te.version");
  if (!te) return nullptr;
  const TeSearchRule* rule = find_te_rule(library, *te);
  if (!rule) return nullptr;
  std::string site = facts.get_string("python.site_packages").value_or("");
  auto env = [&](std::string_view name) { return facts.get_string("env." + std::string(name)).value_or(""); };
  for (const auto& step : rule->steps) {
    std::vector<const Copy*> found;
    switch (step.kind) {
    case TeStepKind::glob: {
      std::string dir;
      for (auto var : step.env_vars)
        if (dir.empty()) dir = env(var);
      if (dir.empty() && !step.env_vars.empty() && step.default_dir.empty()) break;
      if (dir.empty()) dir = std::string(step.default_dir);
      std::vector<std::string> dirs{dir};
      if (dir == "/usr/local/cuda")
        if (auto toolkit = facts.get_string("cuda.toolkit_path")) dirs.push_back(*toolkit);
      for (const auto& c : copies)
        for (const auto& d : dirs)
          if (under(c.path, d) && !(step.skip_stub && c.path.find("stub") != std::string::npos)) found.push_back(&c);
      std::stable_sort(found.begin(), found.end(),
                       [](const Copy* a, const Copy* b) { return util::path_file_name(a->path) > util::path_file_name(b->path); });
      break;
    }
    case TeStepKind::pip:
      if (site.empty()) break;
      for (const auto& c : copies)
        if (under(c.path, site + "/" + std::string(step.dir))) found.push_back(&c);
      break;
    case TeStepKind::ldconfig:
      // ldconfig caches the system directories: a copy found there by the directory scan
      // ("system") is in `ldconfig -p` as well.
      for (const auto& c : copies)
        if (c.source == "ld_cache" || c.source == "system") found.push_back(&c);
      break;
    case TeStepKind::dlopen:
      for (const auto& c : copies)
        if (c.source == "ld_library_path") found.push_back(&c);
      for (const auto& c : copies)
        if (c.source == "ld_cache" || c.source == "system") found.push_back(&c);
      break;
    }
    if (!found.empty()) return found.front();
  }
  return nullptr;
}

} // namespace

void relink_from_facts(model::Facts& facts, std::string_view library) {
  std::string lib(library);
  std::vector<Copy> copies;
  for (std::size_t i = 0, n = facts.count(lib + ".copies"); i < n; ++i) {
    std::string base = lib + ".copies[" + std::to_string(i) + "]";
    auto path = facts.get_string(base + ".path");
    auto version = facts.get_version(base + ".version");
    if (path && version) copies.push_back({*path, *version, facts.get_string(base + ".source").value_or("")});
  }
  if (copies.empty()) return;
  auto find = [&](const std::string& path) -> const Copy* {
    for (const auto& c : copies)
      if (c.path == path) return &c;
    return nullptr;
  };
  if (facts.has("te." + lib + ".path")) {
    if (const Copy* pick = te_pick(facts, copies, library)) {
      facts.set("te." + lib + ".path", pick->path);
      facts.set("te." + lib + ".version", pick->version);
    }
  }
  if (auto path = facts.get_string("torch." + lib + ".path"))
    if (const Copy* c = find(*path)) facts.set("torch." + lib + ".version", c->version);
  for (std::string consumer : {"te", "torch"}) {
    auto path = facts.get_string(consumer + "." + lib + ".path");
    auto version = facts.get_version(consumer + "." + lib + ".version");
    if (!path || !version) continue;
    facts.set(lib + ".path", *path);
    facts.set(lib + ".version", *version);
    facts.set(lib + ".loaded_by", consumer == "te" ? "transformer_engine" : "torch");
    break;
  }
  derive_import_orders(facts, library);
  facts.derive();
}

} // namespace probe
