#include "probe/vendor_child.hpp"

#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace probe {

void ChildChannel::calling(std::string_view symbol) const {
  util::write_all(m_fd, "call " + std::string(symbol) + "\n");
}

void ChildChannel::finish(const model::Facts& facts) const {
  util::write_all(m_fd, "facts " + facts.to_json(-1) + "\n");
}

PendingVendorChild start_vendor_child(std::string_view what, std::chrono::milliseconds timeout,
                                      const std::function<void(const ChildChannel&)>& body) {
  return PendingVendorChild(std::string(what), util::start_function(
                                                   [&](int fd) {
                                                     body(ChildChannel(fd));
                                                     return 0;
                                                   },
                                                   timeout));
}

void StartedVendorProbe::finish(model::Facts& facts) {
  if (m_child) m_merge(m_child->collect(), facts);
  else record_status(facts, m_probe, m_status, m_reason);
}

VendorOutcome run_vendor_child(std::string_view what, std::chrono::milliseconds timeout,
                               const std::function<void(const ChildChannel&)>& body) {
  return start_vendor_child(what, timeout, body).collect();
}

VendorOutcome PendingVendorChild::collect() {
  VendorOutcome result;
  const std::string& what = m_what;
  if (!m_child) {
    result.status = "error";
    result.reason = what + ": cannot start the child process: " + m_child.error().message;
    return result;
  }
  util::ChildOutcome outcome = m_child->wait();
  std::string last_call;
  std::optional<std::string_view> json;
  for (auto line : util::split(outcome.out, '\n')) {
    if (line.starts_with("call ")) last_call = std::string(line.substr(5));
    else if (line.starts_with("facts ")) json = line.substr(6);
  }
  std::string where = last_call.empty() ? "" : " in " + last_call;
  if (outcome.timed_out) {
    result.status = "timeout";
    result.reason = what + " did not answer: " + outcome.describe() + where;
    return result;
  }
  if (outcome.signal) {
    result.status = "crashed";
    result.reason = what + " crashed the probe's child process: " + outcome.describe() + where;
    return result;
  }
  if (!json || !outcome.succeeded()) {
    result.status = "error";
    result.reason = what + " child ended without a result (" + outcome.describe() + ")" + where;
    return result;
  }
  auto facts = model::Facts::from_json(*json, what + " child");
  if (!facts) {
    result.status = "error";
    result.reason = facts.error().message;
    return result;
  }
  result.facts = std::move(*facts);
  return result;
}

} // namespace probe
