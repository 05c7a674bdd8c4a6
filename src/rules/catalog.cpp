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

bool installs_on(const PackageRelease& release, const NodeAbi& node) {
  if (node.cuda_major > 0 && !release.cuda_majors.empty() &&
      std::find(release.cuda_majors.begin(), release.cuda_majors.end(), node.cuda_major) == release.cuda_majors.end())
    return false;
  if (node.python && release.python && !release.python->contains(*node.python)) return false;
  if (node.torch && release.torch) {
    // torch's local label (+cu128) is not part of the range.
    const auto& c = node.torch->components();
    model::Version plain{c.size() > 0 ? c[0] : 0, c.size() > 1 ? c[1] : 0, c.size() > 2 ? c[2] : 0};
    if (!release.torch->contains(plain)) return false;
  }
  return true;
}

bool prebuilt_for(const PackageRelease& release, const NodeAbi& node) {
  if (!release.prebuilt) return false;
  if (!release.prebuilt_torch) return true;
  if (!node.torch) return false;
  const auto& c = node.torch->components();
  model::Version minor{c.size() > 0 ? c[0] : 0, c.size() > 1 ? c[1] : 0};
  return release.prebuilt_torch->contains(minor);
}

} // namespace rules
