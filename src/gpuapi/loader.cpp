#include "gpuapi/loader.hpp"

namespace gpuapi {

namespace {

// DlLibrary's message is "cannot load NAME: DLERROR"; keep the dlerror() part.
std::string dlerror_part(const std::string& message, const std::string& name) {
  std::string prefix = "cannot load " + name + ": ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

} // namespace

util::Result<util::DlLibrary> open_first(std::span<const std::string> candidates, util::LinkNamespace ns) {
  if (candidates.empty()) return util::Error{util::ErrorKind::invalid, "no library candidates given"};
  std::optional<util::Error> first_absent;
  for (const auto& candidate : candidates) {
    auto library = util::DlLibrary::open(candidate, ns);
    if (library) return library;
    const auto& error = library.error();
    std::string why = dlerror_part(error.message, candidate);
    if (error.kind != util::ErrorKind::not_installed) {
      return util::Error{error.kind, candidate + " cannot be loaded: " + why};
    }
    if (!first_absent) first_absent = util::Error{util::ErrorKind::not_installed, candidates[0] + " not found: " + why};
  }
  return *first_absent;
}

} // namespace gpuapi
