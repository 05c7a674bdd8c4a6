#include "rules/catalog.hpp"

#include <algorithm>
#include <cctype>

namespace rules {

std::string normalize_distribution(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!out.empty() && out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::vector<const Package*> Catalog::for_fact(std::string_view fact) const {
  std::vector<const Package*> out;
  for (const auto& p : packages)
    if (p.fact == fact) out.push_back(&p);
  return out;
}

const Package* Catalog::find(std::string_view name) const {
  std::string wanted = normalize_distribution(name);
  for (const auto& p : packages)
    if (normalize_distribution(p.name) == wanted) return &p;
  return nullptr;
}

namespace {

// torch's local label (+cu128) is not part of a range.
model::Version plain(const model::Version& v) {
  const auto& c = v.components();
  return model::Version{c.size() > 0 ? c[0] : 0, c.size() > 1 ? c[1] : 0, c.size() > 2 ? c[2] : 0};
}

// Whether pip gets the release's prebuilt files on this node (a source build needs nothing of
// glibc beyond what the node's own compiler links against).
bool gets_prebuilt_files(const PackageRelease& release, const NodeAbi& node) {
  if (!release.prebuilt_torch && !release.prebuilt_python) return true;
  return prebuilt_for(release, node);
}

} // namespace

std::string misfit(const PackageRelease& release, const NodeAbi& node) {
  if (node.cuda_major > 0 && !release.cuda_majors.empty() &&
      std::find(release.cuda_majors.begin(), release.cuda_majors.end(), node.cuda_major) == release.cuda_majors.end())
    return "not built for CUDA " + std::to_string(node.cuda_major);
  if (node.python && release.python && !release.python->contains(*node.python))
    return "not built for Python " + node.python->to_string() + " (" + release.python->text() + ")";
  if (node.torch && release.torch && !release.torch->contains(plain(*node.torch)))
    return "not for torch " + plain(*node.torch).to_string() + " (" + release.torch->text() + ")";
  if (node.glibc && release.glibc && *node.glibc < *release.glibc && gets_prebuilt_files(release, node))
    return "its prebuilt files need glibc " + release.glibc->to_string() + "; the node has " + node.glibc->to_string();
  if (node.driver) {
    for (const auto& floor : release.driver) {
      if (floor.cuda_major != 0 && node.cuda_major > 0 && floor.cuda_major != node.cuda_major) continue;
      if (floor.min_sm > 0 && node.max_sm < floor.min_sm) continue;
      if (*node.driver < floor.version)
        return "its " + (floor.cuda_major ? "CUDA " + std::to_string(floor.cuda_major) + " " : std::string()) + "build needs driver " +
               floor.version.to_string() + " or newer" + (floor.min_sm ? " on sm" + std::to_string(floor.min_sm) + "+ GPUs" : "") +
               "; the node's is " + node.driver->to_string();
    }
  }
  return {};
}

bool installs_on(const PackageRelease& release, const NodeAbi& node) { return misfit(release, node).empty(); }

std::optional<PackageRequirement> parse_requirement(std::string_view text) {
  std::size_t end = 0;
  while (end < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-' || text[end] == '_' || text[end] == '.'))
    ++end;
  if (end == 0) return std::nullopt;
  PackageRequirement r;
  r.text = std::string(text);
  r.name = normalize_distribution(text.substr(0, end));
  std::string_view rest = text.substr(end);
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    rest = rest.substr(close + 1);
  }
  if (rest.empty()) return r;
  auto range = model::VersionRange::parse(rest);
  if (!range) return std::nullopt;
  r.range = std::move(*range);
  return r;
}

const PackageRelease* resolve(const Catalog& catalog, const PackageRequirement& requirement, const NodeAbi& node, const Package** package) {
  const Package* p = catalog.find(requirement.name);
  if (package) *package = p;
  if (!p) return nullptr;
  // pip takes the newest final release in range; a pre-release only when none fits (or it is
  // named, ==4.6.0.dev0, which then is the only one in range).
  const PackageRelease* final_release = nullptr;
  const PackageRelease* pre_release = nullptr;
  for (const auto& r : p->releases) {
    if (requirement.range && !requirement.range->contains(r.version)) continue;
    if (!installs_on(r, node)) continue;
    const PackageRelease*& slot = r.version.is_prerelease() ? pre_release : final_release;
    if (!slot || slot->version < r.version) slot = &r;
  }
  return final_release ? final_release : pre_release;
}

std::string misfit(const Catalog& catalog, const PackageRelease& release, const NodeAbi& node) {
  if (auto why = misfit(release, node); !why.empty()) return why;
  for (const auto& requirement : release.requirements) {
    const Package* package = nullptr;
    if (!resolve(catalog, requirement, node, &package) && package)
      return "it needs " + requirement.text + ", which has no release in the catalog for this node";
  }
  return {};
}

bool prebuilt_for(const PackageRelease& release, const NodeAbi& node) {
  if (!release.prebuilt) return false;
  if (release.prebuilt_python && node.python) {
    const auto& p = node.python->components();
    if (!release.prebuilt_python->contains(model::Version{p.size() > 0 ? p[0] : 0, p.size() > 1 ? p[1] : 0})) return false;
  }
  if (!release.prebuilt_torch) return true;
  if (!node.torch) return false;
  const auto& c = node.torch->components();
  model::Version minor{c.size() > 0 ? c[0] : 0, c.size() > 1 ? c[1] : 0};
  return release.prebuilt_torch->contains(minor);
}

} // namespace rules
