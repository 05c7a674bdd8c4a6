// Calls into vendor libraries (NVML, libcuda) run in a forked child so that a library that
// hangs or crashes cannot hang or kill the doctor.
//
// The protocol on the result pipe is line-oriented text. Before each vendor call the child
// writes "call <symbol>"; at the end it writes "facts <Facts JSON on one line>" and exits 0. The
// parent bounds the child by a timeout (then kills its process group). A child that died, hung
// or never wrote its facts becomes a status (crashed, timeout, error) whose reason names the
// last vendor call the child announced: "killed by signal 11 (Segmentation fault) in
// nvmlDeviceGetCount_v2".
#pragma once

#include "model/facts.hpp"
#include "probe/probe.hpp"
#include "util/subprocess.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace probe {

// The child's end of the pipe.
class ChildChannel {
public:
  explicit ChildChannel(int fd) : m_fd(fd) {}
  // Announces the vendor call about to be made.
  void calling(std::string_view symbol) const;
  // Sends the facts; the last thing the child writes.
  void finish(const model::Facts& facts) const;

private:
  int m_fd;
};

struct VendorOutcome {
  std::optional<model::Facts> facts; // what the child sent, when it finished
  std::string status;                // when it did not: crashed, timeout or error
  std::string reason;
};

// A vendor child already running (start_vendor_child); collect() waits for it, bounded by the
// timeout counted from its start, and reads its outcome. Call collect() once.
class PendingVendorChild {
public:
  PendingVendorChild(std::string what, util::Result<util::RunningChild> child)
      : m_what(std::move(what)), m_child(std::move(child)) {}
  VendorOutcome collect();

private:
  std::string m_what;
  util::Result<util::RunningChild> m_child;
};

// Forks the child that runs body and returns at once, so that the caller's other work overlaps
// the vendor library's (NVML's init alone takes tens of milliseconds). Start it before any thread.
PendingVendorChild start_vendor_child(std::string_view what, std::chrono::milliseconds timeout,
                                      const std::function<void(const ChildChannel&)>& body);

// A started vendor probe: the pending child and what to do with its outcome; or, when the probe
// decided not to call the library at all, only the status to record (skipped, with a reason).
class StartedVendorProbe final : public StartedProbe {
public:
  using Merge = void (*)(VendorOutcome outcome, model::Facts& facts);
  StartedVendorProbe(PendingVendorChild child, Merge merge) : m_child(std::move(child)), m_merge(merge) {}
  StartedVendorProbe(std::string_view probe, std::string status, std::string reason)
      : m_probe(probe), m_status(std::move(status)), m_reason(std::move(reason)) {}
  void finish(model::Facts& facts) override;

private:
  std::optional<PendingVendorChild> m_child;
  Merge m_merge = nullptr;
  std::string_view m_probe;
  std::string m_status;
  std::string m_reason;
};

// Runs body in a child bounded by timeout. what names the work in reasons ("NVML").
VendorOutcome run_vendor_child(std::string_view what, std::chrono::milliseconds timeout,
                               const std::function<void(const ChildChannel&)>& body);

} // namespace probe
