// Fuzz target: the preflight's image environment (issue 37, "the preflight readers"):
// probe::read_image_environment on an OCI runtime config (process.env) or image config
// (config.Env) given by --image-config or found beside an unpacked rootfs, read through a memfd
// path as the file would be, then what a preflight does with it: the env probe records the
// variables a job would see as facts, and the facts go to JSON and back (a node-facts file or a
// report holds them that way). Properties: the reader returns an environment or an error that
// names the file, and never throws; every variable it keeps is KEY=VALUE with a non-empty KEY and
// no '=' in it; the recorded facts load back from their JSON unchanged.
#include "fuzz_common.hpp"
#include "probe/image_env.hpp"
#include "probe/node_probes.hpp"
#include "util/fd.hpp"

#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static util::Fd file(::memfd_create("nvte-fuzz-image-config", MFD_CLOEXEC));
  if (!file) return 0;
  if (::ftruncate(file.get(), 0) != 0 || ::pwrite(file.get(), data, size, 0) != static_cast<ssize_t>(size)) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(file.get());
  auto env = probe::read_image_environment(path);
  if (!env) {
    if (!env.error().message.starts_with(path)) std::abort();
    return 0;
  }
  if (env->source != path) std::abort();
  for (const auto& [key, value] : env->env) {
    if (key.empty() || key.find('=') != std::string::npos) std::abort();
  }
  probe::Host host;
  host.env = env->env;
  model::Facts facts;
  probe::run_env_probe(host, facts);
  auto again = model::Facts::from_json(facts.to_json(), "image-env.json");
  if (!again.ok() || again->entries() != facts.entries()) std::abort();
  return 0;
}
