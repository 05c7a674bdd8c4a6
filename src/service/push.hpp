// HTTP push of reports with an on-disk spool. A report to deliver is first written to the spool
// (one file per report, names that sort in arrival order), then the spool is flushed oldest
// first; a file leaves the spool only after the server answered 2xx. A report that could not be
// delivered stays for the next run, so nothing is lost; the spool is bounded in count and bytes
// and drops its oldest reports with a warning. A spooled file that cannot be a report (a torn
// disk, a hand edit) is set aside with a warning instead of blocking the queue. Each request
// carries the report's spool name as Idempotency-Key, so a receiver can drop a repeat after a
// lost response.
#pragma once

#include "service/config.hpp"
#include "util/result.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace service {

class Spool {
public:
  Spool(std::filesystem::path dir, std::size_t max_reports, std::uint64_t max_bytes)
      : m_dir(std::move(dir)), m_max_reports(max_reports), m_max_bytes(max_bytes) {}

  // Adds a report (atomically), then enforces the bounds, dropping the oldest (warned).
  // Returns the new file's path.
  util::Result<std::filesystem::path> add(std::string_view document);
  // Spooled reports, oldest first.
  util::Result<std::vector<std::filesystem::path>> pending() const;
  // Drops the oldest files until the bounds hold; returns how many were dropped.
  std::size_t enforce_bounds();
  // Moves a spooled file that cannot be a report (unreadable, truncated, not a JSON object) out
  // of the queue, to NAME.json.corrupt beside it, with a warning naming why: sending it would
  // fail (or be refused) on every run and hold back every report behind it. Only the newest
  // k_max_set_aside such files are kept, for a post-mortem. False when it could not be moved.
  bool set_aside(const std::filesystem::path& file, const std::string& why);
  static constexpr std::size_t k_max_set_aside = 8;
  const std::filesystem::path& dir() const { return m_dir; }

private:
  std::filesystem::path m_dir;
  std::size_t m_max_reports;
  std::uint64_t m_max_bytes;
};

// The bearer token from file: trimmed content. Refuses a file that group or others may read or
// write, and an empty one. The token never appears in a message.
util::Result<std::string> read_token(const std::filesystem::path& file);

// The push URL for a report of host: every "{host}" in url replaced by the host name, with any
// byte outside [A-Za-z0-9._-] percent-encoded (an empty host is "unknown").
std::string push_url(std::string_view url, std::string_view host);

// One POST (or PUT, config.method) of body (application/json) to config.url; ok on 2xx. Errors: timeout, connection failures,
// other statuses ("HTTP 500 from URL").
util::Result<void> post_report(const PushConfig& config, const std::string& token, const std::string& body,
                               const std::string& idempotency_key);

struct FlushResult {
  std::size_t sent = 0;    // delivered and removed from the spool
  std::size_t pending = 0; // still spooled
  std::size_t dropped = 0; // dropped by the bounds
  std::size_t set_aside = 0; // corrupted spool files moved out of the queue (warned)
  std::string last_error;  // why the flush stopped, empty when everything went out
};

// Sends every spooled report in order, each with up to config.retries retries after
// exponential backoff with jitter; stops at the first report that still fails (so order
// holds). sleep is injectable for tests (default: std::this_thread::sleep_for).
using SleepFunction = std::function<void(std::chrono::milliseconds)>;
FlushResult flush_spool(const PushConfig& config, Spool& spool, const SleepFunction& sleep = {});

// The delay before retry number attempt (1-based): backoff * 2^(attempt-1), capped at
// max_backoff, then scaled by a random factor in [0.5, 1.0].
std::chrono::milliseconds retry_delay(const PushConfig& config, int attempt);

// Spools the report and flushes the spool (the `run` step); the token is read once here.
FlushResult push_report(const PushConfig& config, std::string_view document, const SleepFunction& sleep = {});

// GETs url through the same dlopen'd libcurl as push (TLS verification on, no redirects, the body
// capped at max_bytes); an HTTP error status, a timeout or a larger body is an error naming url.
util::Result<std::string> http_get(const std::string& url, std::chrono::milliseconds timeout, std::size_t max_bytes);

} // namespace service
