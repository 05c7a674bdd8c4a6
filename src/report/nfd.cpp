// Node Feature Discovery local features file (/etc/kubernetes/node-feature-discovery/features.d/).
// NFD turns each `name=value` line into the node label feature.node.kubernetes.io/<name>=<value>;
// names and values must be at most 63 characters of [A-Za-z0-9._-], beginning and ending with
// an alphanumeric character. Versions such as `2.11.0+cu130` and workload names such as
// `deepseek-ai/DeepSeek-V3` are sanitised (other characters become `_` or `-`); text that had to
// be changed or shortened keeps a short hash so two different inputs never collide.
#include "report/render.hpp"
#include "util/hash.hpp"

#include <cctype>

namespace report {

namespace {

constexpr std::size_t k_max_label = 63;
constexpr std::string_view k_prefix = "nvte-doctor.";

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool is_allowed(char c) { return is_alnum(c) || c == '.' || c == '_' || c == '-'; }

std::string trim_ends(std::string s) {
  std::size_t b = 0, e = s.size();
  while (b < e && !is_alnum(s[b])) ++b;
  while (e > b && !is_alnum(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Sanitises to at most max characters: '+' becomes '_', '/' becomes '-', other characters
// outside the set become '-', the ends are trimmed to alphanumerics. When that loses
// information (a cut, a trimmed end, a character other than '+' or '/'), "-<8 hex>" of the
// original text is appended so that different inputs keep different labels.
std::string sanitize_to(std::string_view text, std::size_t max) {
  if (text.empty()) return {};
  std::string mapped;
  bool lossy = false;
  for (char c : text) {
    if (is_allowed(c)) mapped += c;
    else if (c == '+') mapped += '_';
    else if (c == '/') mapped += '-';
    else {
      lossy = true;
      if (mapped.empty() || mapped.back() != '-') mapped += '-'; // one '-' per run of odd characters
    }
  }
  std::string out = trim_ends(mapped);
  lossy = lossy || out.size() != mapped.size() || out.size() > max;
  if (!lossy) return out;
  std::string hash = util::hex64(util::fnv1a64(text)).substr(0, 8);
  out = trim_ends(out.substr(0, std::min(out.size(), max - hash.size() - 1)));
  return out.empty() ? hash : out + "-" + hash;
}

std::string fact_for_feature(const model::Facts& facts, std::string_view name) {
  const model::Value* value = facts.get(name);
  return value ? value->to_string() : std::string();
}

void line(std::string& out, std::string_view name, std::string_view value) {
  std::string v = nfd_sanitize(value);
  if (v.empty()) return;
  out += std::string(k_prefix) + std::string(name) + "=" + v + "\n";
}

} // namespace

std::string nfd_sanitize(std::string_view text) { return sanitize_to(text, k_max_label); }

std::string render_nfd(const model::Report& report, const std::string& expires_at) {
  std::string out = "# Written by nvte-doctor " + report.tool_version + " at " + report.generated_at +
                    "; labels feature.node.kubernetes.io/nvte-doctor.*\n";
  if (!expires_at.empty()) out += "# +expiry-time=" + expires_at + "\n";
  const model::Facts& f = report.facts;
  line(out, "status", report.summary.status);
  line(out, "errors", std::to_string(report.summary.errors));
  line(out, "warnings", std::to_string(report.summary.warnings));
  line(out, "driver", fact_for_feature(f, "driver.version"));
  line(out, "driver-cuda", fact_for_feature(f, "driver.cuda_version"));
  line(out, "cuda", fact_for_feature(f, "cuda.runtime_version"));
  line(out, "cudnn", fact_for_feature(f, "cudnn.version"));
  line(out, "nccl", fact_for_feature(f, "nccl.version"));
  line(out, "cublaslt", fact_for_feature(f, "cublaslt.version"));
  line(out, "torch", fact_for_feature(f, "torch.version"));
  line(out, "te", fact_for_feature(f, "te.version"));
  line(out, "gpu-sm", fact_for_feature(f, "gpu[0].sm"));
  line(out, "rules", report.rules_digest.substr(0, 12));
  // Schedulers keep jobs off nodes whose verdicts are guesses or whose kernels corrupt results.
  line(out, "knowledge-extrapolated", report.knowledge.extrapolated.empty() ? "false" : "true");
  bool wrong = false;
  for (const auto& finding : report.findings) wrong = wrong || finding.impact == model::Impact::wrong_results;
  line(out, "wrong-results", wrong ? "true" : "false");
  for (const auto& e : report.workloads) {
    // NFD's 63-character limit covers the whole name after its namespace:
    // "nvte-doctor.workload.<name>".
    std::string name = sanitize_to(e.workload.name, k_max_label - k_prefix.size() - std::string_view("workload.").size());
    if (name.empty()) name = util::hex64(util::fnv1a64(e.workload.name)).substr(0, 8);
    // The backend is a promise only when the verdict is one (runs, at_risk): a job scheduled by
    // this label must run. fails, no_backend and unknown are "none".
    line(out, "workload." + name, model::runnable(e.verdict.verdict) && e.verdict.backend ? *e.verdict.backend : std::string("none"));
    line(out, "verdict." + name, std::string(model::to_string(e.verdict.verdict))); // "verdict." is shorter than "workload."
  }
  return out;
}

} // namespace report
