// pci: NVIDIA GPUs as the PCI bus shows them, through libpci, so the doctor can name the GPUs
// of a node whose driver is missing or broken. libpci's sysfs method is pointed at
// Host::root/sys/bus/pci, so tests scan fake sysfs trees. Names, architecture, compute
// capability and memory come from the device-ID table (gpu_ids.cpp), not from pci.ids, which
// GPU nodes rarely have.
//
// libpci opens the sysfs files itself, following links as this machine's kernel does. Under an
// examined tree (tree_policy.hpp) the scan therefore runs only when every link of the tree's
// /sys/bus/pci/devices and of each device directory resolves on this machine to the same file as
// inside the tree, and nothing there is a device, FIFO or socket: a crafted tree cannot make
// libpci read a file of the node or block on a terminal.
//
// libpci reports fatal problems through a callback that must not return (its default prints and
// calls exit). Ours longjmps back to the scan with the message; the scan's frame holds nothing
// with a destructor, and the pci_access is released after the jump.
#include "probe/gpu_facts.hpp"
#include "probe/gpu_ids.hpp"
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"
#include "probe/tree_policy.hpp"

#include "util/file.hpp"
#include "util/result.hpp"

extern "C" {
#include <pci/pci.h>
}

#include <algorithm>
#include <sys/stat.h>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <tuple>
#include <vector>

namespace probe {

namespace {

constexpr unsigned k_nvidia_vendor = 0x10de;
constexpr unsigned k_display_class = 0x03; // base class: VGA (0300), 3D (0302), other (0380)

struct PciGpu {
  unsigned domain, bus, device, function;
  unsigned device_id;
};

// Owns a pci_access (pci_alloc / pci_cleanup).
class PciAccess {
public:
  PciAccess() : m_access(pci_alloc()) {}
  PciAccess(const PciAccess&) = delete;
  PciAccess& operator=(const PciAccess&) = delete;
  ~PciAccess() {
    if (m_access) pci_cleanup(m_access);
  }
  pci_access* get() const { return m_access; }

private:
  pci_access* m_access;
};

thread_local std::jmp_buf* t_error_jump = nullptr;
thread_local char t_error_message[512];

// __attribute__ (not [[noreturn]]): libpci declares the hook noreturn as part of its type, which clang checks.
__attribute__((noreturn)) void on_pci_error(char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(t_error_message, sizeof t_error_message, format, args);
  va_end(args);
  std::longjmp(*t_error_jump, 1);
}

void on_pci_warning(char*, ...) {}

// Only trivially destructible objects live in this frame: the longjmp may leave it.
bool scan(pci_access* access, char* sysfs_path, PciGpu* out, std::size_t capacity, std::size_t* found) {
  std::jmp_buf jump;
  t_error_jump = &jump;
  if (setjmp(jump) != 0) {
    t_error_jump = nullptr;
    return false;
  }
  access->error = on_pci_error;
  access->warning = on_pci_warning;
  access->debug = on_pci_warning;
  access->method = PCI_ACCESS_SYS_BUS_PCI;
  pci_set_param(access, const_cast<char*>("sysfs.path"), sysfs_path);
  pci_init(access);
  pci_scan_bus(access);
  for (pci_dev* dev = access->devices; dev; dev = dev->next) {
    pci_fill_info(dev, PCI_FILL_IDENT | PCI_FILL_CLASS);
    if (dev->vendor_id != k_nvidia_vendor || (dev->device_class >> 8) != k_display_class) continue;
    if (*found < capacity) {
      out[*found] = PciGpu{static_cast<unsigned>(dev->domain), dev->bus, dev->dev, dev->func, dev->device_id};
    }
    ++*found;
  }
  t_error_jump = nullptr;
  return true;
}

util::Result<std::vector<PciGpu>> scan_nvidia_gpus(const std::filesystem::path& sysfs_bus_pci) {
  std::error_code ec;
  if (!std::filesystem::is_directory(sysfs_bus_pci / "devices", ec)) {
    return util::Error{util::ErrorKind::not_found, "no PCI sysfs tree at " + sysfs_bus_pci.string()};
  }
  std::string path = sysfs_bus_pci.string();
  std::vector<PciGpu> gpus(64);
  for (;;) {
    PciAccess access;
    if (!access.get()) return util::Error{util::ErrorKind::io, "libpci: pci_alloc failed"};
    std::size_t found = 0;
    if (!scan(access.get(), path.data(), gpus.data(), gpus.size(), &found)) {
      return util::Error{util::ErrorKind::io, std::string("libpci on ") + path + ": " + t_error_message};
    }
    if (found <= gpus.size()) {
      gpus.resize(found);
      return gpus;
    }
    gpus.resize(found);
  }
}

// Whether the node path, resolved inside root, is the file this machine's kernel reaches from
// its host path; a path missing on both sides is the same (nothing to read).
util::Result<void> same_inside_and_out(const std::filesystem::path& root, const std::filesystem::path& canonical_root,
                                       const std::string& node_path) {
  std::error_code ec;
  auto outside = std::filesystem::canonical(host_path(root, node_path), ec);
  auto inside = resolve_node_path(root, node_path);
  if (ec && !inside) return {};
  if (ec || !inside || outside != canonical_root / inside->real.relative_path())
    return util::Error{util::ErrorKind::invalid,
                       node_path + " leads out of the tree (" + (ec ? std::string("missing inside") : outside.string()) + ")"};
  struct stat st {};
  if (::stat(outside.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    return util::Error{util::ErrorKind::invalid, node_path + ": not a regular file (" + util::file_type_text(st.st_mode) + ")"};
  return {};
}

// The examined tree's PCI sysfs, checked before libpci reads it (see the top of the file).
util::Result<void> sysfs_stays_inside(const std::filesystem::path& root) {
  std::error_code ec;
  auto canonical_root = std::filesystem::canonical(root, ec);
  if (ec) return util::Error{util::ErrorKind::not_found, root.string() + ": " + ec.message()};
  const std::string devices = "/sys/bus/pci/devices";
  NVTE_TRY_VOID(same_inside_and_out(root, canonical_root, devices));
  for (const auto& device : node_list_directory(root, devices)) {
    const std::string dir = devices + "/" + device;
    NVTE_TRY_VOID(same_inside_and_out(root, canonical_root, dir));
    for (const auto& name : node_list_directory(root, dir)) NVTE_TRY_VOID(same_inside_and_out(root, canonical_root, dir + "/" + name));
  }
  return {};
}

} // namespace

void run_pci_probe(const Host& host, model::Facts& facts) {
  if (tree_kind(host) == TreeKind::examined) {
    if (auto contained = sysfs_stays_inside(host.root); !contained) {
      record_status(facts, "pci", "error", "not scanned: the tree's PCI sysfs " + contained.error().message);
      return;
    }
  }
  auto gpus = scan_nvidia_gpus(util::under_root(host.root, "/sys/bus/pci"));
  if (!gpus) {
    record_status(facts, "pci", "error", gpus.error().message);
    return;
  }
  std::sort(gpus->begin(), gpus->end(), [](const PciGpu& a, const PciGpu& b) {
    return std::tie(a.domain, a.bus, a.device, a.function) < std::tie(b.domain, b.bus, b.device, b.function);
  });
  model::Facts found;
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    const PciGpu& gpu = (*gpus)[i];
    std::string base = gpu_base(i);
    char bus_id[32], device_id[8];
    std::snprintf(bus_id, sizeof bus_id, "%04x:%02x:%02x.%x", gpu.domain, gpu.bus, gpu.device, gpu.function);
    std::snprintf(device_id, sizeof device_id, "0x%04x", gpu.device_id);
    found.set(base + ".pci_bus_id", std::string(bus_id));
    found.set(base + ".pci_device_id", std::string(device_id));
    auto id = static_cast<std::uint16_t>(gpu.device_id);
    if (const GpuModel* model = find_gpu_model(id)) {
      found.set(base + ".name", std::string(model->name));
      if (model->memory_mib > 0) found.set(base + ".memory_mib", model->memory_mib);
    } else {
      found.set(base + ".name", "NVIDIA device " + std::string(device_id));
    }
    if (auto family = gpu_family_for(id)) {
      found.set(base + ".architecture", std::string(family->architecture));
      found.set(base + ".compute_capability", model::Version{family->cc_major, family->cc_minor});
      found.set(base + ".sm", static_cast<long>(family->cc_major * 10 + family->cc_minor));
    }
    found.set(base + ".source", "pci");
  }
  for (std::size_t i = 0; i < gpus->size(); ++i) merge_gpu(facts, found, i, MergePolicy::fill_missing);
  record_status(facts, "pci", "ok");
}

} // namespace probe
