#include "probe/import_order.hpp"

#include "probe/te_load_order.hpp"

namespace probe {

namespace {

// torch/backends/cudnn/__init__.py _init(): compatible when the majors agree and the runtime's
// minor is at least the compiled one (cuDNN >= 7); the variable skips the check.
bool torch_cudnn_check_fails(const model::Version& compiled, const model::Version& runtime, const model::Facts& facts) {
  if (facts.get_string("env.PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK") == "1") return false;
  if (runtime.major() != compiled.major()) return true;
  return runtime.minor() < compiled.minor();
}

} // namespace

void derive_import_orders(model::Facts& facts, std::string_view library) {
  const std::string lib(library);
  if (lib == "cudnn") {
    for (const char* prefix : {"te.cudnn.torch_first", "te.cudnn.te_first", "torch.cudnn.te_first", "cudnn.mapped_copies",
                               "torch.cudnn.check_fails"})
      facts.erase_prefix(prefix);
    // torch alone: its own copy against its build (an older cuDNN first on LD_LIBRARY_PATH, a
    // wheel downgraded under it). Only with the build's version known; the copy is no proxy here.
    auto own = facts.get_version("torch.cudnn.version");
    auto build = facts.get_version("torch.cudnn.compiled_version");
    if (own && build) facts.set("torch.cudnn.check_fails", torch_cudnn_check_fails(*build, *own, facts));
  } else if (lib == "nvrtc") {
    facts.erase_prefix("nvrtc.mapped_copies");
  } else {
    return;
  }
  auto te_path = facts.get_string("te." + lib + ".path");
  auto torch_path = facts.get_string("torch." + lib + ".path");
  if (!te_path || !torch_path) return;
  // Only TE's own dlopen maps a second copy; where TE does not search for the library (a
  // release not modelled), its core library's NEEDED binds to whatever is mapped.
  auto te_release = facts.get_version("te.version");
  if (!te_release || !find_te_rule(lib, *te_release)) return;
  auto te_version = facts.get_version("te." + lib + ".version");
  auto torch_version = facts.get_version("torch." + lib + ".version");
  long copies = *te_path == *torch_path ? 1 : 2;
  if (lib == "nvrtc") {
    facts.set("nvrtc.mapped_copies.torch_first", copies);
    return;
  }

  // torch first: each consumer on its own pick.
  facts.set("te.cudnn.torch_first.path", *te_path);
  if (te_version) facts.set("te.cudnn.torch_first.version", *te_version);
  facts.set("cudnn.mapped_copies.torch_first", copies);

  // TE first: TE's pick holds the SONAME libcudnn.so.<major>; torch's NEEDED of that SONAME binds to it.
  facts.set("te.cudnn.te_first.path", *te_path);
  if (te_version) facts.set("te.cudnn.te_first.version", *te_version);
  bool same_soname = te_version && torch_version && te_version->major() == torch_version->major();
  if (copies == 1 || same_soname) {
    facts.set("torch.cudnn.te_first.path", *te_path);
    if (te_version) facts.set("torch.cudnn.te_first.version", *te_version);
    facts.set("cudnn.mapped_copies.te_first", 1L);
    // The build's cuDNN: the wheel torch pins, else (a torch without that pin) the copy it loads.
    auto compiled = facts.get_version("torch.cudnn.compiled_version");
    if (!compiled) compiled = torch_version;
    if (te_version && compiled) facts.set("torch.cudnn.te_first.fails", torch_cudnn_check_fails(*compiled, *te_version, facts));
  } else if (te_version && torch_version) {
    // Another major: another SONAME, so torch loads its own copy beside TE's.
    facts.set("torch.cudnn.te_first.path", *torch_path);
    facts.set("torch.cudnn.te_first.version", *torch_version);
    facts.set("cudnn.mapped_copies.te_first", 2L);
    facts.set("torch.cudnn.te_first.fails", false);
  }
}

} // namespace probe
