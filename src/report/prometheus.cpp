// Prometheus textfile output (node_exporter textfile collector). Every metric family is written
// once with its HELP and TYPE lines, then its samples; a family with no samples is left out so
// promtool sees no empty families. Label values are escaped per the exposition format
// (backslash, double quote, newline); series that would repeat the same label set are merged.
//
// Self-test results are read from the report's self-test object when it has a "checks" list of
// {"name", "passed" | "status", "seconds"} entries (or an object of such entries by name).
#include "report/render.hpp"
#include "util/strings.hpp"

#include <cstdio>
#include <set>

namespace report {

namespace {

// Label values must be UTF-8: node_exporter's textfile collector rejects the whole file otherwise.
std::string escape_label(std::string_view raw) {
  std::string value = util::valid_utf8(raw);
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// Whole numbers as integers, others with microsecond precision (enough for seconds).
std::string number(double value) {
  if (value == static_cast<double>(static_cast<long long>(value)) && value < 1e15 && value > -1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.6f", value);
  return text;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

class Family {
public:
  Family(std::string name, std::string type, std::string help)
      : m_name(std::move(name)), m_type(std::move(type)), m_help(std::move(help)) {}

  void add(const Labels& labels, double value) {
    std::string key;
    if (!labels.empty()) {
      key += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i) key += ',';
        key += labels[i].first + "=\"" + escape_label(labels[i].second) + '"';
      }
      key += '}';
    }
    if (!m_seen.insert(key).second) return;
    m_samples += m_name + key + ' ' + number(value) + '\n';
  }

  void write(std::string& out) const {
    if (m_samples.empty()) return;
    out += "# HELP " + m_name + ' ' + m_help + '\n';
    out += "# TYPE " + m_name + ' ' + m_type + '\n';
    out += m_samples;
  }

private:
  std::string m_name, m_type, m_help;
  std::set<std::string> m_seen;
  std::string m_samples;
};

std::string fact_for_label(const model::Facts& facts, std::string_view name) {
  const model::Value* value = facts.get(name);
  return value ? value->to_string() : std::string();
}

std::string first_fact(const model::Facts& facts, std::initializer_list<std::string_view> names) {
  for (auto name : names) {
    if (auto value = fact_for_label(facts, name); !value.empty()) return value;
  }
  return {};
}

int status_value(const std::string& status) {
  if (status == "OK") return 0;
  if (status == "WARNING") return 1;
  if (status == "CRITICAL") return 2;
  return 3;
}

// One series per check that ran (a skipped check did not: no series); a check run once per
// workload is written once, with its first outcome.
void add_selftest(const model::SelftestSummary& selftest, Family& passed, Family& seconds) {
  for (const auto& check : selftest.checks) {
    if (check.status == "skipped" || check.check.empty()) continue;
    passed.add({{"check", check.check}}, check.status == "ok" ? 1 : 0);
    seconds.add({{"check", check.check}}, check.seconds);
  }
}

} // namespace

std::string render_prometheus(const model::Report& report, const RunTiming& timing) {
  const model::Facts& f = report.facts;
  Family info("nvte_doctor_info", "gauge",
              "Versions on this node and of the doctor as labels; the value is always 1.");
  info.add({{"host", report.host},
            {"doctor_version", report.tool_version},
            {"rules_digest", report.rules_digest},
            {"driver", fact_for_label(f, "driver.version")},
            {"driver_cuda", fact_for_label(f, "driver.cuda_version")},
            {"cuda", first_fact(f, {"cuda.runtime_version", "cuda.toolkit_version"})},
            {"cudnn", fact_for_label(f, "cudnn.version")},
            {"nccl", fact_for_label(f, "nccl.version")},
            {"cublaslt", fact_for_label(f, "cublaslt.version")},
            {"torch", fact_for_label(f, "torch.version")},
            {"te", fact_for_label(f, "te.version")},
            {"gpu", fact_for_label(f, "gpu[0].name")}},
           1);

  Family status("nvte_doctor_status", "gauge",
                "The node's own health from its findings (workload verdicts are nvte_doctor_workload_verdict): 0 OK, 1 WARNING, "
                "2 CRITICAL, 3 UNKNOWN.");
  status.add({}, status_value(report.summary.status));

  Family counts("nvte_doctor_findings_by_severity", "gauge",
                "Number of the node's own findings by severity (workload findings not counted).");
  counts.add({{"severity", "error"}}, report.summary.errors);
  counts.add({{"severity", "warning"}}, report.summary.warnings);
  counts.add({{"severity", "info"}}, report.summary.infos);

  Family findings("nvte_doctor_findings", "gauge",
                  "One series per finding (rule id, severity, workload; empty workload = node finding); the value is always 1.");
  for (const auto& finding : report.findings) {
    findings.add({{"id", finding.id}, {"severity", std::string(model::to_string(finding.severity))}, {"workload", finding.workload}}, 1);
  }

  Family impact("nvte_doctor_finding_impact", "gauge",
                "One series per finding about a kernel that TE selects and that then misbehaves: impact wrong_results "
                "(runs but computes wrong results) or runtime_failure (fails at run time); the value is always 1.");
  for (const auto& finding : report.findings) {
    if (finding.impact == model::Impact::none) continue;
    impact.add({{"id", finding.id}, {"impact", std::string(model::to_string(finding.impact))}, {"workload", finding.workload}}, 1);
  }
  Family extrapolated("nvte_doctor_knowledge_extrapolated", "gauge",
                      "1 when the node's fact lies beyond what the rules and TE's conformance data model (the verdicts "
                      "are extrapolated), 0 when it is modelled; one series per fact the node has.");
  for (const auto& x : report.knowledge.extrapolated) extrapolated.add({{"fact", x.fact}}, 1);
  for (const char* name : {"te.version", "cudnn.version", "flash_attn.version", "flash_attn_3.version", "flash_attn_4.version"})
    if (f.has(name) || (std::string_view(name) == "te.version" && !report.knowledge.assumed_te.empty()))
      extrapolated.add({{"fact", name}}, 0);
  if (f.get_int("gpu.count").value_or(0) > 0) extrapolated.add({{"fact", "gpu.compute_capability"}}, 0);

  Family available("nvte_doctor_attention_backend_available", "gauge",
                   "1 when TE's attention backend can run the workload on this node, else 0.");
  Family selected("nvte_doctor_attention_backend_selected", "gauge",
                  "1 for the attention backend TE would select for the workload, 0 for the others.");
  Family runnable("nvte_doctor_workload_runnable", "gauge",
                  "1 when the workload's attention runs on this node (verdict runs or at_risk), else 0 (fails, no_backend, unknown).");
  Family verdicts("nvte_doctor_workload_verdict", "gauge",
                  "One series per workload with its verdict (runs, at_risk, fails, no_backend, unknown), the backend it runs on "
                  "(empty when none) and the evidence (predicted, observed, ran); the value is always 1.");
  static const std::pair<const char*, const char*> k_backends[] = {
      {"flash_attention", "FlashAttention"}, {"fused_attention", "FusedAttention"}, {"unfused_attention", "UnfusedDotProductAttention"}};
  for (const auto& e : report.workloads) {
    for (const auto& [key, name] : k_backends) {
      auto it = e.backends.find(key);
      bool is_available = it == e.backends.end() || it->second.available;
      available.add({{"workload", e.workload.name}, {"backend", name}}, is_available ? 1 : 0);
      selected.add({{"workload", e.workload.name}, {"backend", name}}, e.selected && *e.selected == name ? 1 : 0);
    }
    runnable.add({{"workload", e.workload.name}}, model::runnable(e.verdict.verdict) ? 1 : 0);
    verdicts.add({{"workload", e.workload.name},
                  {"verdict", std::string(model::to_string(e.verdict.verdict))},
                  {"backend", e.verdict.backend.value_or("")},
                  {"evidence", std::string(model::to_string(e.verdict.evidence))}},
                 1);
  }

  Family selftest_passed("nvte_doctor_selftest_passed", "gauge", "1 when the self-test check passed, else 0.");
  Family selftest_seconds("nvte_doctor_selftest_duration_seconds", "gauge", "Wall time of the self-test check.");
  if (report.selftest) add_selftest(*report.selftest, selftest_passed, selftest_seconds);

  Family last_run(std::string(k_last_run_metric), "gauge",
                  "Unix time of the last `nvte-doctor run`, also when nothing had changed.");
  last_run.add({}, timing.timestamp_seconds);
  Family duration("nvte_doctor_run_duration_seconds", "gauge", "Wall time of the last full check.");
  duration.add({}, timing.duration_seconds);

  std::string out;
  for (const Family* family : {&info, &status, &counts, &findings, &impact, &extrapolated, &available, &selected, &runnable, &verdicts,
                               &selftest_passed, &selftest_seconds, &last_run, &duration}) {
    family->write(out);
  }
  return out;
}

} // namespace report
