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

// Runs body in a child bounded by timeout. what names the work in reasons ("NVML").
VendorOutcome run_vendor_child(std::string_view what, std::chrono::milliseconds timeout,
                               const std::function<void(const ChildChannel&)>& body);

} // namespace probe
