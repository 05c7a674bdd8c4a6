// The short verdict a failed preflight leaves as its container's termination message: what
// `kubectl describe pod` and `kubectl get pod -o jsonpath=...terminated.message` show. The
// kubelet keeps at most 4096 bytes of it, so the lines are cut here, at a line, not by the
// kubelet in the middle of one.
#include "report/render.hpp"

#include "util/strings.hpp"

namespace report {

std::string render_termination_message(const model::Report& report, std::size_t max_bytes) {
  // The preflight's verdict for the job: the node's status and its workloads' together.
  std::string head = "nvte-doctor " + report.summary.overall_status();
  if (auto image = report.facts.get_string("preflight.image"))
    head +=
        ": image " + util::one_line(*image) + " on node " + util::one_line(report.facts.get_string("preflight.node").value_or(report.host));
  else head += " on " + util::one_line(report.host);
  std::string out = head.substr(0, max_bytes > 1 ? max_bytes - 1 : 0) + "\n";
  std::size_t left_out = 0;
  // Each workload's verdict line first: it is what the job's owner asks.
  for (const auto& e : report.workloads) {
    const auto& v = e.verdict;
    std::string line = "workload " + util::one_line(e.workload.name) + ": " + std::string(model::describe(v.verdict)) +
                       (v.backend && model::runnable(v.verdict) ? " on " + *v.backend : "") +
                       (v.because.empty() ? "" : ": " + util::one_line(v.because)) +
                       (v.fix && v.verdict != model::Verdict::runs
                            ? "; fix: " + util::one_line(v.fix->command.empty() ? v.fix->description : v.fix->command)
                            : "") +
                       "\n";
    if (out.size() + line.size() + 40 > max_bytes) {
      ++left_out;
      continue;
    }
    out += line;
  }
  // Errors first, then warnings: the reason the job did not start comes before the advice.
  for (auto severity : {model::Severity::error, model::Severity::warning}) {
    for (const auto& f : report.findings) {
      if (f.severity != severity) continue;
      std::string line = std::string(model::to_string(f.severity)) + ": " + util::one_line(f.title) +
                         (f.workload.empty() ? "" : " (workload " + util::one_line(f.workload) + ")") + " [" + f.id + "]";
      if (!f.fixes.empty()) line += "; fix: " + util::one_line(f.fixes.front().command);
      line += "\n";
      if (out.size() + line.size() + 40 > max_bytes) {
        ++left_out;
        continue;
      }
      out += line;
    }
  }
  if (left_out > 0) out += "(" + std::to_string(left_out) + " more: see the container's log)\n";
  return out;
}

} // namespace report
