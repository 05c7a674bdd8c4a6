// One report text into the few fields the fleet summary needs, with nlohmann's SAX parser: no
// tree is built, so a report costs its parse and a few strings. The handler keeps the key under
// which each open container sits; a value is taken when that path is one of the few wanted
// (host, generated_at, summary.status, findings[].id|severity|title, workloads[].name|selected|
// verdict|backend|verdict_finding|fix.command, facts.<component>.version, facts.gpu[0].name).
// Anything else in the report is skipped as it streams by.
#include "service/fleet.hpp"

#include "util/input_guard.hpp"

#include <nlohmann/json.hpp>

#include <array>

namespace service {

namespace {

using Json = nlohmann::json;

// The facts that make a configuration, in model::k_configuration_keys order; CUDA is the
// runtime version, else the toolkit's (as the Prometheus _info metric has it).
struct StackFact {
  const char* component;
  const char* field;
  std::size_t slot;
};
constexpr std::array<StackFact, 7> k_stack_facts = {{{"driver", "version", 0},
                                                     {"cuda", "runtime_version", 1},
                                                     {"cuda", "toolkit_version", 1},
                                                     {"cudnn", "version", 2},
                                                     {"nccl", "version", 3},
                                                     {"torch", "version", 4},
                                                     {"te", "version", 5}}};

class ReportSax : public nlohmann::json_sax<Json> {
public:
  explicit ReportSax(FleetReader::Loaded& out) : m_out(out) {}

  bool null() override { return value(nullptr); }
  bool boolean(bool) override { return value(nullptr); }
  bool number_integer(number_integer_t) override { return value(nullptr); }
  bool number_unsigned(number_unsigned_t) override { return value(nullptr); }
  bool number_float(number_float_t, const string_t&) override { return value(nullptr); }
  bool string(string_t& s) override { return value(&s); }
  bool binary(binary_t&) override { return value(nullptr); }

  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    m_stack.back().key = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // nlohmann's text names line and column: "[json.exception.parse_error.101] parse error at line 1, ...".
    std::string what = e.what();
    auto at = what.find("parse error");
    m_error = "not valid JSON: " + (at == std::string::npos ? what : what.substr(at));
    return false;
  }

  const std::string& error() const { return m_error; }
  bool saw_host() const { return m_host; }
  bool saw_summary() const { return m_summary; }
  bool root_is_object() const { return m_root_object; }

private:
  struct Frame {
    bool array;
    std::string key; // the current key (objects)
  };

  // The key of the container at depth i (0: the root's current key).
  const std::string& key_at(std::size_t i) const { return m_stack[i].key; }

  bool open(bool array) {
    std::size_t depth = m_stack.size();
    if (depth == 0) {
      m_root_object = !array;
    } else if (!array && depth == 2 && m_stack[1].array) {
      // A new entry of findings[] or workloads[].
      if (key_at(0) == "findings") m_out.findings.emplace_back();
      else if (key_at(0) == "workloads") {
        m_out.workloads.emplace_back();
        m_workload = {};
      }
    } else if (!array && depth == 1 && key_at(0) == "summary") {
      m_summary = true;
    }
    m_stack.push_back(Frame{array, {}});
    return true;
  }

  bool close() {
    // The end of a workloads[] entry: its verdict and backend (or, before verdicts, its
    // selected backend) make the node's answer for it.
    if (m_stack.size() == 3 && m_stack[1].array && key_at(0) == "workloads" && !m_out.workloads.empty()) {
      auto& w = m_out.workloads.back();
      w.label = m_workload.label();
      w.verdict = m_workload.verdict_or_selection();
      w.fix = m_workload.fix;
      w.finding = m_workload.finding;
    }
    m_stack.pop_back();
    return true;
  }

  bool value(string_t* s) {
    std::size_t depth = m_stack.size();
    if (depth == 0 || m_stack.back().array) return true;
    const std::string& k = m_stack.back().key;
    if (depth == 1) {
      if (k == "host" && s) {
        m_out.node.host = *s;
        m_host = true;
      } else if (k == "generated_at" && s) {
        m_out.node.generated_at = *s;
      }
    } else if (depth == 2 && key_at(0) == "summary") {
      if (k == "status" && s) m_out.node.status = *s;
    } else if (depth == 3 && m_stack[1].array && key_at(0) == "findings" && !m_out.findings.empty()) {
      auto& f = m_out.findings.back();
      std::string text = s ? *s : std::string();
      if (k == "id") f.id = text;
      else if (k == "severity") f.severity = text;
      else if (k == "title") f.title = text;
    } else if (depth == 3 && m_stack[1].array && key_at(0) == "workloads" && !m_out.workloads.empty()) {
      if (k == "name" && s) m_out.workloads.back().name = *s;
      else if (k == "selected") m_workload.selected = s ? *s : "";
      else if (k == "verdict" && s) m_workload.verdict = *s;
      else if (k == "backend") m_workload.backend = s ? *s : "";
      else if (k == "verdict_finding") m_workload.finding = s ? *s : "";
    } else if (depth == 4 && m_stack[1].array && key_at(0) == "workloads" && key_at(2) == "fix" && k == "command" && s) {
      m_workload.fix = *s;
    } else if (depth == 4 && m_stack[2].array && key_at(0) == "facts" && key_at(1) == "gpu" && k == "name" && s) {
      if (!m_out.gpu) m_out.gpu = *s;
    } else if (depth == 3 && key_at(0) == "facts" && s) {
      for (const auto& fact : k_stack_facts) {
        if (key_at(1) != fact.component || k != fact.field) continue;
        // The runtime version wins over the toolkit's, whichever comes first.
        if (fact.slot == 1 && k == "toolkit_version" && m_cuda_runtime) continue;
        if (fact.slot == 1 && k == "runtime_version") m_cuda_runtime = true;
        m_out.versions[fact.slot] = *s;
      }
    }
    return true;
  }

  // The members of the workloads[] entry being read.
  struct WorkloadFields {
    std::string selected, verdict, backend, fix, finding;
    std::string verdict_or_selection() const {
      if (!verdict.empty()) return verdict;
      return selected.empty() ? "no_backend" : "runs";
    }
    std::string label() const {
      if (verdict.empty()) return selected.empty() ? "none" : selected;
      if (verdict == "runs") return backend.empty() ? "runs" : backend;
      if (verdict == "at_risk") return (backend.empty() ? "runs" : backend) + " (at risk)";
      if (verdict == "fails") return backend.empty() ? "fails" : "fails (" + backend + ")";
      if (verdict == "no_backend") return "none";
      return verdict; // unknown, or a verdict of a newer doctor
    }
  };

  FleetReader::Loaded& m_out;
  WorkloadFields m_workload;
  std::vector<Frame> m_stack;
  std::string m_error;
  bool m_host = false, m_summary = false, m_root_object = false, m_cuda_runtime = false;
};

} // namespace

util::Result<FleetReader::Loaded> read_fleet_report(const std::string& file, std::string_view text) {
  // Reports come from other nodes: the input layer's limits apply before the parser runs.
  if (auto checked = util::check_json(text, file); !checked) return checked.take_error();
  FleetReader::Loaded loaded;
  ReportSax sax(loaded);
  bool parsed = false;
  try {
    parsed = Json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const Json::exception& e) {
    return util::Error{util::ErrorKind::parse, file + ": not valid JSON: " + e.what()};
  }
  if (!parsed) return util::Error{util::ErrorKind::parse, file + ": " + sax.error()};
  if (!sax.root_is_object() || !sax.saw_host() || !sax.saw_summary()) {
    return util::Error{util::ErrorKind::parse, file + ": not an nvte-doctor report (JSON with host and summary)"};
  }
  loaded.node.file = file;
  return loaded;
}

} // namespace service
