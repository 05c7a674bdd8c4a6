// The parent's side of the protocol in selftest.hpp: re-execute, bound, and turn every way a
// child can end into data.
#include "selftest/selftest.hpp"

#include "util/json_text.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

#include <algorithm>

extern char** environ; // NOLINT(readability-redundant-declaration): POSIX, for the child's environment

namespace selftest {

namespace {

// The last few lines of a child's stderr, to go with an abnormal end.
std::string stderr_tail(const std::string& err) {
  auto lines = util::split(err, '\n');
  std::vector<std::string> kept;
  for (auto it = lines.rbegin(); it != lines.rend() && kept.size() < 6; ++it) {
    auto line = util::trim(*it);
    if (!line.empty()) kept.insert(kept.begin(), std::string(line));
  }
  return util::join(kept, "\n");
}

} // namespace

std::map<std::string, std::string> environment_with(const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos) env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  for (const auto& [name, value] : overrides) env[name] = value;
  return env;
}

CheckOutcome run_check(const RunnerOptions& options, std::string_view check, const Json& args, std::string label,
                       ChildStream* stream_out) {
  CheckOutcome outcome;
  outcome.check = std::string(check);
  outcome.label = std::move(label);
  util::CommandOptions command;
  command.timeout = options.timeout;
  if (!options.environment.empty()) command.environment = environment_with(options.environment);
  outcome.started = std::chrono::duration<double>(std::chrono::steady_clock::now() - options.epoch).count();
  auto ran = util::run_command({options.executable, "selftest-child", std::string(check), util::json_text(args)}, command);
  if (!ran) {
    outcome.status = "error";
    outcome.error = ran.error().message;
    return outcome;
  }
  outcome.seconds = ran->seconds;
  ChildStream stream = parse_child_stream(ran->out);
  for (auto& p : stream.phases) {
    if (p.open) p.seconds = std::max(p.seconds, ran->seconds - p.start); // until the kill, as near as the parent knows
  }
  outcome.phases = stream.phases;
  std::string tail = stderr_tail(ran->err);
  if (!ran->succeeded()) {
    outcome.status = "error";
    outcome.timed_out = ran->timed_out;
    const PhaseSpan* at = stream.current();
    if (at) outcome.phase = at->phase;
    std::string where = at ? " during " + stream.open_phases() : "";
    outcome.error = "the check's child process " + ran->describe() + where + (tail.empty() ? "" : ": " + tail);
    if (stream_out) *stream_out = std::move(stream);
    return outcome;
  }
  if (!stream.result || !stream.result->contains("status") || !(*stream.result)["status"].is_string()) {
    outcome.status = "error";
    std::string what = stream.malformed.empty() ? "" : " (it wrote '" + stream.malformed + "')";
    outcome.error = "the check's child process wrote no result object" + what + (tail.empty() ? "" : ": " + tail);
    if (stream_out) *stream_out = std::move(stream);
    return outcome;
  }
  Json result = std::move(*stream.result);
  outcome.status = result["status"].get<std::string>();
  if (outcome.status != "ok" && outcome.status != "failed" && outcome.status != "skipped") {
    outcome.error = "unknown status '" + outcome.status + "'";
    outcome.status = "error";
  } else if (result.contains("error") && result["error"].is_string()) {
    outcome.error = result["error"].get<std::string>();
  }
  outcome.result = std::move(result);
  if (stream_out) *stream_out = std::move(stream);
  return outcome;
}

} // namespace selftest
