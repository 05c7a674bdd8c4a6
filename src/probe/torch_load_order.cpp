#include "probe/torch_load_order.hpp"

#include "probe/node_path.hpp"

namespace probe {

namespace {

constexpr std::string_view k_torch_objects[] = {"libtorch_global_deps.so", "libtorch_cuda.so", "libtorch.so",
                                                "libtorch_python.so", "libc10_cuda.so", "libcaffe2_nvrtc.so"};

} // namespace

util::Result<ConsumerChoice> torch_library_choice(const LoaderView& view, const std::string& torch_dir, const LibrarySpec& spec) {
  std::string lib_dir = torch_dir + "/lib";
  bool any_object = false;
  for (auto object : k_torch_objects) {
    std::string path = lib_dir + "/" + std::string(object);
    auto resolved = resolve_node_path(view.root, path);
    if (!resolved) continue;
    auto dynamic = read_elf_dynamic(NodeFile{view.root, resolved->real});
    if (!dynamic) continue;
    any_object = true;
    for (const auto& needed : dynamic->needed) {
      if (!is_library_file(spec, needed)) continue;
      auto found = resolve_needed(view, needed, Requester{path, &dynamic.value()});
      if (!found) {
        return util::Error{found.error().kind, "torch's " + std::string(object) + " needs " + needed + ": " + found.error().message};
      }
      ConsumerChoice choice;
      choice.path = found->path;
      auto real = resolve_node_path(view.root, found->path);
      choice.real = real ? real->real.string() : found->path;
      choice.soname = needed;
      choice.reason = found->reason + " (NEEDED " + needed + " of " + std::string(object) + ")";
      return choice;
    }
  }
  if (!any_object) return util::Error{util::ErrorKind::not_found, "no readable torch shared objects in " + lib_dir};
  return util::Error{util::ErrorKind::not_found,
                     "no torch shared object in " + lib_dir + " has a DT_NEEDED " + std::string(spec.stem) + ".so*"};
}

} // namespace probe
