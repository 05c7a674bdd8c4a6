// `run` without the check: fingerprint, state, decision, lock and the last-run refresh. This is
// the code every node pays for every few minutes, so it reads only small files and stat()s paths:
// no dlopen, no CUDA, no Python. The paths to stat come from the last report's facts, so a new
// library copy in a directory the last probe saw shows up as a changed directory mtime.
#include "service/run.hpp"

#include "util/file.hpp"
#include "util/hash.hpp"
#include "util/input_guard.hpp"
#include "util/json_text.hpp"
#include "util/logging.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <fcntl.h>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

extern char** environ;

namespace service {

namespace fs = std::filesystem;

namespace {

std::string stat_text(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::string("missing (") + util::errno_text(errno) + ")";
  return std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
         " " + std::to_string(st.st_ino);
}

std::string content_hash(const fs::path& path, std::size_t max_bytes) {
  auto text = util::read_file(path, max_bytes);
  if (!text) return "unreadable";
  return util::hex64(util::fnv1a64(*text));
}

// The parts of a report an unchanged run reads, its facts and summary, parsed once a run: the
// fingerprint and the status both ask for the same text, and the rest (workloads, findings: most
// of a report) is skipped by the parser's callback instead of being built and dropped. subset is
// empty when the text is not a whole JSON object or breaks the input layer's limits (refused:
// why, in the caller's words).
struct ParsedReport {
  std::string text;
  std::optional<std::string> refused;
  std::optional<nlohmann::json> subset;
};

const ParsedReport& parse_report(std::string_view report_json, std::string_view what) {
  thread_local ParsedReport last;
  thread_local bool made = false;
  if (made && last.text == report_json) return last;
  made = true;
  last = ParsedReport{std::string(report_json), std::nullopt, std::nullopt};
  // collect_paths recurses per level: the input layer's depth limit comes first.
  if (auto checked = util::check_json(report_json, std::string(what)); !checked) {
    last.refused = checked.error().message;
    return last;
  }
  auto keep = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key) return parsed == "facts" || parsed == "summary";
    return true;
  };
  auto doc = nlohmann::json::parse(report_json, keep, false);
  if (!doc.is_discarded() && doc.is_object()) last.subset = std::move(doc);
  return last;
}

// Every absolute path among the string leaves of the facts, and the site-packages directories.
void collect_paths(const nlohmann::json& node, const std::string& key, std::set<std::string>& paths,
                   std::set<std::string>& site_packages) {
  if (node.is_object()) {
    for (const auto& [k, v] : node.items()) collect_paths(v, k, paths, site_packages);
  } else if (node.is_array()) {
    for (const auto& v : node) collect_paths(v, key, paths, site_packages);
  } else if (node.is_string()) {
    const auto& s = node.get_ref<const std::string&>();
    if (s.size() > 1 && s[0] == '/' && s.find('\n') == std::string::npos) {
      // LD_LIBRARY_PATH-like values hold several paths.
      for (auto part : util::split(s, ':')) {
        if (!part.empty() && part[0] == '/') paths.insert(std::string(part));
      }
      if (util::ends_with(key, "site_packages")) site_packages.insert(s);
    }
  }
}

// The paths an unchanged run stats, summary.status and the report they came from: parsed from
// the report, or read from the file save_report_paths wrote at the last full run.
struct ReportPaths {
  std::string key; // "SIZE HASH" of the report's text
  std::string status;
  std::set<std::string> paths, site_packages;
};

std::string report_key(std::string_view report_json) {
  return std::to_string(report_json.size()) + " " + util::hex64(util::fnv1a64(report_json));
}

constexpr std::string_view k_report_paths_header = "nvte-doctor report paths 1";

// The file's paths when it was written for this very report text; nullopt otherwise (missing,
// stale, or not a file save_report_paths wrote): then the report is parsed.
std::optional<ReportPaths> read_report_paths(const fs::path& file, std::string_view report_json) {
  auto text = util::read_file(file, 16u << 20);
  if (!text || text->empty() || text->back() != '\n') return std::nullopt;
  ReportPaths kept;
  std::size_t line_number = 0;
  for (auto line : util::split(std::string_view(*text).substr(0, text->size() - 1), '\n')) {
    ++line_number;
    auto space = line.find(' ');
    std::string_view tag = line.substr(0, space), value = space == std::string_view::npos ? "" : line.substr(space + 1);
    if (line_number == 1) {
      if (line != k_report_paths_header) return std::nullopt;
    } else if (line_number == 2) {
      if (tag != "report" || value != report_key(report_json)) return std::nullopt;
    } else if (line_number == 3) {
      if (tag != "status" || value.empty()) return std::nullopt;
      kept.status = value;
    } else if (tag == "path" && !value.empty()) {
      kept.paths.emplace(value);
    } else if (tag == "site_packages" && !value.empty()) {
      kept.site_packages.emplace(value);
    } else {
      return std::nullopt;
    }
  }
  if (line_number < 3) return std::nullopt;
  return kept;
}

} // namespace

bool is_relevant_environment(std::string_view name) {
  for (std::string_view prefix : {"NVTE_", "CUDA_", "CUDNN_", "NCCL_", "NVIDIA_"}) {
    if (util::starts_with(name, prefix)) return true;
  }
  for (std::string_view exact : {"LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "PATH"}) {
    if (name == exact) return true;
  }
  return false;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

Fingerprint compute_fingerprint(const FingerprintInputs& in) {
  std::vector<std::string> lines;
  auto add = [&](std::string name, std::string value) { lines.push_back(std::move(name) + "\t" + std::move(value)); };
  auto node = [&](const fs::path& p) { return util::under_root(in.root, p); };
  // The files and directories whose stat(2) is an input: collected first, then asked on several
  // threads (an unchanged run's fingerprint was 320 stats one after the other, 1.8-2.0 ms of its
  // 4.4-5.1 ms on the H200 node).
  std::vector<std::pair<std::string, fs::path>> stats; // line name, host path

  add("tool.version", in.tool_version);
  for (const char* file : {"/proc/driver/nvidia/version", "/sys/module/nvidia/version"}) {
    add(std::string("file:") + file, content_hash(node(file), 64 << 10));
  }
  for (const char* path : {"/etc/ld.so.cache", "/usr/local", "/usr/local/cuda", "/usr/local/cuda/lib64"}) {
    add(std::string("stat:") + path, stat_text(node(path)));
  }

  auto add_paths = [&](const std::set<std::string>& paths, const std::set<std::string>& site_packages) {
    std::set<std::string> dirs;
    for (const auto& p : paths) {
      stats.emplace_back("stat:" + p, node(p));
      fs::path parent = fs::path(p).parent_path();
      if (!parent.empty() && parent != "/") dirs.insert(parent.string());
    }
    for (const auto& d : dirs) stats.emplace_back("dir:" + d, node(d));
    for (const auto& sp : site_packages) {
      auto entries = util::list_directory(node(sp));
      if (!entries) continue;
      for (const auto& name : *entries) {
        if (util::ends_with(name, ".dist-info")) stats.emplace_back("dist-info:" + sp + "/" + name, node(fs::path(sp) / name));
      }
    }
  };
  std::optional<ReportPaths> kept;
  std::optional<std::string> last_status;
  if (in.last_report_json && in.report_paths_file) kept = read_report_paths(*in.report_paths_file, *in.last_report_json);
  if (kept) {
    // The paths and status the parse below would give: the file was written for this very text.
    last_status = kept->status;
    add_paths(kept->paths, kept->site_packages);
  } else if (in.last_report_json) {
    const ParsedReport& parsed = parse_report(*in.last_report_json, "the last report");
    if (parsed.refused) util::log::warning(*parsed.refused + "; running a full check");
    last_status = report_status(*in.last_report_json); // the same parse, kept by parse_report
    const auto& report = parsed.subset;
    if (report && report->contains("facts")) {
      std::set<std::string> paths, site_packages;
      collect_paths((*report)["facts"], "", paths, site_packages);
      add_paths(paths, site_packages);
    } else {
      add("last-report", "unparsable");
    }
  } else {
    add("last-report", "none");
  }

  for (const auto& [name, value] : in.environment) {
    // Hashed: state.json names what changed without keeping the values.
    if (is_relevant_environment(name)) add("env:" + name, util::hex64(util::fnv1a64(value)));
  }
  for (const auto& dir : in.rules_dirs) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".yaml") stats.emplace_back("rules:" + it->path().string(), it->path());
    }
    if (ec) add("rules:" + dir.string(), "unreadable (" + ec.message() + ")");
  }
  for (const auto& file : in.workload_files) add("workload:" + file.string(), content_hash(file, 16u << 20));
  if (in.config_file) add("config:" + in.config_file->string(), content_hash(*in.config_file, 1u << 20));

  std::vector<std::string> stated(stats.size());
  constexpr std::size_t k_parallel_from = 64;
  util::parallel_for(stats.size(), stats.size() >= k_parallel_from ? std::min(util::available_cpus(), 4u) : 1u,
                     [&](std::size_t i) { stated[i] = stat_text(stats[i].second); });
  for (std::size_t i = 0; i < stats.size(); ++i) add(std::move(stats[i].first), std::move(stated[i]));

  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  std::uint64_t hash = util::k_fnv_offset;
  for (const auto& line : lines) hash = util::fnv1a64(line + "\n", hash);
  return Fingerprint{util::hex64(hash), std::move(lines), std::move(last_status)};
}

util::Result<WorkloadFiles> list_workload_files(const fs::path& dir) {
  WorkloadFiles files;
  auto entries = NVTE_TRY(util::list_directory(dir));
  for (const auto& name : entries) {
    fs::path path = dir / name;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      if (fs::is_regular_file(path / "config.json", ec)) files.hf_configs.push_back(path / "config.json");
      continue;
    }
    if (name.starts_with(".")) continue;
    auto ext = path.extension().string();
    if (ext == ".yaml" || ext == ".yml") {
      files.workload_files.push_back(path);
    } else if (ext == ".sh" || ext == ".args") {
      files.megatron_args.push_back(path);
    } else if (ext == ".json") {
      auto text = util::read_file(path, 16u << 20);
      if (!text) return text.take_error();
      bool hf = text->find("\"num_attention_heads\"") != std::string::npos;
      (hf ? files.hf_configs : files.workload_files).push_back(path);
    }
  }
  return files;
}

namespace {

// The state file as save_state writes it, read without nlohmann::json: an unchanged run read
// 19 KB of inputs through the JSON lexer (1.5 M of its 7.4 M instructions; issue 40, round 5).
// Key idea: accept only a subset of JSON whose value is plain to see (the four keys in save_state's
// order, strings of printable ASCII with the escapes json_text writes for it, JSON numbers) and
// return nullopt for anything else, which load_state then parses as before; so every text gets
// the state (or the warning) it got from nlohmann::json.
class StateReader {
public:
  explicit StateReader(std::string_view text) : m_text(text) {}

  std::optional<RunState> read() {
    RunState state;
    if (!punct('{') || !key("schema_version") || !number() || !punct(',') || !key("fingerprint") || !quoted(state.fingerprint) ||
        !punct(',') || !key("last_full_run"))
      return std::nullopt;
    auto seconds = number();
    if (!seconds || !punct(',') || !key("inputs") || !punct('[')) return std::nullopt;
    state.last_full_run = *seconds;
    if (!punct(']')) {
      do {
        // check_json's value limit (10^6) stays the slow path's to report.
        if (state.inputs.size() >= k_max_inputs || !quoted(state.inputs.emplace_back())) return std::nullopt;
      } while (punct(','));
      if (!punct(']')) return std::nullopt;
    }
    if (!punct('}')) return std::nullopt;
    skip_space();
    if (m_at != m_text.size()) return std::nullopt;
    return state;
  }

private:
  static constexpr std::size_t k_max_inputs = 100'000;

  void skip_space() {
    while (m_at < m_text.size() && (m_text[m_at] == ' ' || m_text[m_at] == '\n' || m_text[m_at] == '\t' || m_text[m_at] == '\r')) ++m_at;
  }
  bool punct(char c) {
    skip_space();
    if (m_at >= m_text.size() || m_text[m_at] != c) return false;
    ++m_at;
    return true;
  }
  bool key(std::string_view name) {
    std::string found;
    return quoted(found) && found == name && punct(':');
  }
  // A string of printable ASCII and the escapes \" \\ \/ \b \f \n \r \t (no \u, no byte >= 0x80).
  bool quoted(std::string& out) {
    if (!punct('"')) return false;
    while (m_at < m_text.size()) {
      std::size_t run = m_at;
      while (run < m_text.size() && m_text[run] >= 0x20 && m_text[run] <= 0x7e && m_text[run] != '"' && m_text[run] != '\\') ++run;
      out.append(m_text.substr(m_at, run - m_at));
      m_at = run;
      if (m_at >= m_text.size()) return false;
      char c = m_text[m_at++];
      if (c == '"') return true;
      if (c != '\\') return false; // a control character, DEL or a byte >= 0x80
      if (m_at >= m_text.size()) return false;
      switch (m_text[m_at++]) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      default: return false;
      }
    }
    return false;
  }
  // A JSON number (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) as the nearest double, which is
  // what nlohmann::json's get<double>() gives for every such text.
  std::optional<double> number() {
    skip_space();
    std::size_t start = m_at;
    auto digits = [&] {
      std::size_t from = m_at;
      while (m_at < m_text.size() && m_text[m_at] >= '0' && m_text[m_at] <= '9') ++m_at;
      return m_at - from;
    };
    if (m_at < m_text.size() && m_text[m_at] == '-') ++m_at;
    if (m_at < m_text.size() && m_text[m_at] == '0') {
      ++m_at;
    } else if (digits() == 0) {
      return std::nullopt;
    }
    bool integer = true; // nlohmann::json keeps an integer, whose -0 converts to +0.0
    if (m_at < m_text.size() && m_text[m_at] == '.') {
      integer = false;
      ++m_at;
      if (digits() == 0) return std::nullopt;
    }
    if (m_at < m_text.size() && (m_text[m_at] == 'e' || m_text[m_at] == 'E')) {
      integer = false;
      ++m_at;
      if (m_at < m_text.size() && (m_text[m_at] == '+' || m_text[m_at] == '-')) ++m_at;
      if (digits() == 0) return std::nullopt;
    }
    double value = 0;
    auto [end, ec] = std::from_chars(m_text.data() + start, m_text.data() + m_at, value);
    if (ec != std::errc() || end != m_text.data() + m_at) return std::nullopt;
    return integer && value == 0 ? 0.0 : value;
  }

  std::string_view m_text;
  std::size_t m_at = 0;
};

} // namespace

std::optional<RunState> load_state(const fs::path& file) {
  auto text = util::read_file(file, 16u << 20);
  if (!text) return std::nullopt;
  if (auto state = StateReader(*text).read()) return state;
  auto doc = util::check_json(*text, file.string()) ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("fingerprint") || !doc["fingerprint"].is_string()) {
    util::log::warning(file.string() + ": unreadable run state; running a full check");
    return std::nullopt;
  }
  RunState state;
  state.fingerprint = doc["fingerprint"].get<std::string>();
  if (doc.contains("last_full_run") && doc["last_full_run"].is_number()) state.last_full_run = doc["last_full_run"].get<double>();
  if (doc.contains("inputs") && doc["inputs"].is_array()) {
    for (const auto& line : doc["inputs"]) {
      if (line.is_string()) state.inputs.push_back(line.get<std::string>());
    }
  }
  return state;
}

util::Result<void> save_state(const fs::path& file, const RunState& state) {
  nlohmann::ordered_json doc{{"schema_version", 1},
                             {"fingerprint", state.fingerprint},
                             {"last_full_run", state.last_full_run},
                             {"inputs", state.inputs}};
  return util::write_file_atomic(file, util::json_text(doc, 1) + "\n", 0644);
}

Decision decide(const std::optional<RunState>& last, const Fingerprint& now, bool report_exists,
                std::chrono::seconds max_age, double now_seconds, Force force) {
  if (force == Force::yes) return {true, "forced (--force)"};
  if (!last) return {true, "no previous run state"};
  if (!report_exists) return {true, "the last report is missing"};
  if (last->fingerprint != now.digest) {
    // Name what changed: input names present on one side only or with another value.
    std::set<std::string> before(last->inputs.begin(), last->inputs.end()), after(now.inputs.begin(), now.inputs.end());
    std::set<std::string> changed;
    for (const auto& line : after) {
      if (!before.contains(line)) changed.insert(line.substr(0, line.find('\t')));
    }
    for (const auto& line : before) {
      if (!after.contains(line)) changed.insert(line.substr(0, line.find('\t')));
    }
    std::vector<std::string> names(changed.begin(), changed.end());
    if (names.size() > 3) {
      std::size_t more = names.size() - 3;
      names.resize(3);
      names.push_back("and " + std::to_string(more) + " more");
    }
    return {true, "the node changed: " + (names.empty() ? std::string("fingerprint differs") : util::join(names, ", "))};
  }
  double age = now_seconds - last->last_full_run;
  if (age < -k_clock_slack_seconds) {
    return {true, "the last full check is dated " + std::to_string(static_cast<long long>(-age)) +
                      " s in the future (a corrupted state, or the clock was set back)"};
  }
  if (age >= static_cast<double>(max_age.count())) {
    return {true, "the last full check is " + std::to_string(static_cast<long long>(age)) + " s old (max_age " +
                      std::to_string(max_age.count()) + " s)"};
  }
  return {false, "nothing changed since the check " + std::to_string(static_cast<long long>(age)) + " s ago"};
}

std::optional<std::string> report_status(std::string_view report_json) {
  const auto& doc = parse_report(report_json, "report").subset;
  if (doc && doc->contains("summary") && (*doc)["summary"].is_object() && (*doc)["summary"].contains("status") &&
      (*doc)["summary"]["status"].is_string()) {
    return (*doc)["summary"]["status"].get<std::string>();
  }
  return std::nullopt;
}

void save_report_paths(const fs::path& file, std::string_view report_json) {
  const auto& parsed = parse_report(report_json, "report");
  auto status = report_status(report_json);
  bool keep = parsed.subset && parsed.subset->contains("facts") && status && !status->empty() && status->find('\n') == std::string::npos;
  if (!keep) {
    std::error_code ec;
    fs::remove(file, ec);
    return;
  }
  std::set<std::string> paths, site_packages;
  collect_paths((*parsed.subset)["facts"], "", paths, site_packages);
  std::string text = std::string(k_report_paths_header) + "\nreport " + report_key(report_json) + "\nstatus " + *status + "\n";
  for (const auto& p : paths) text += "path " + p + "\n";
  for (const auto& sp : site_packages) text += "site_packages " + sp + "\n";
  if (auto written = util::write_file_atomic(file, text, 0644); !written) {
    util::log::debug("run: " + written.error().message + " (the next run parses the report)");
    std::error_code ec;
    fs::remove(file, ec);
  }
}

bool textfile_intact(std::string_view textfile) {
  if (textfile.empty() || textfile.back() != '\n') return false;
  for (auto line : util::split(textfile.substr(0, textfile.size() - 1), '\n')) {
    if (line.empty() || line[0] == '#') continue;
    // The value follows the last space; label values may hold spaces, but never after the '}'.
    auto space = line.rfind(' ');
    if (space == std::string_view::npos || space == 0) return false;
    std::string_view name = line.substr(0, space);
    if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_' || name[0] == ':')) return false;
    if (name.find('{') != std::string_view::npos && name.back() != '}') return false;
    auto value = line.substr(space + 1);
    if (!util::parse_double(value) && value != "NaN" && value != "+Inf" && value != "-Inf") return false;
  }
  return true;
}

std::string refresh_metric(std::string_view textfile, std::string_view metric, double value) {
  char number[64];
  std::snprintf(number, sizeof number, "%.6f", value);
  std::string sample = std::string(metric) + " " + number;
  std::string out;
  bool replaced = false;
  for (auto line : util::split(textfile, '\n')) {
    if (line.empty()) continue;
    if (line.size() > metric.size() && util::starts_with(line, metric) && line[metric.size()] == ' ') {
      out += sample + "\n";
      replaced = true;
    } else {
      out += std::string(line) + "\n";
    }
  }
  if (!replaced) {
    out += "# HELP " + std::string(metric) + " Unix time of the last `nvte-doctor run`, also when nothing had changed.\n";
    out += "# TYPE " + std::string(metric) + " gauge\n" + sample + "\n";
  }
  return out;
}

util::Result<RunLock> RunLock::acquire(const fs::path& file, Wait wait) {
  // O_NOFOLLOW and a regular file only: a planted run.lock -> /etc/shadow is refused, not truncated.
  util::Fd fd = NVTE_TRY(util::open_lock_file(file));
  int rc;
  do rc = ::flock(fd.get(), LOCK_EX | (wait == Wait::no ? LOCK_NB : 0));
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    if (err == EWOULDBLOCK) {
      std::string holder = "another process";
      if (auto text = util::read_file(file, 64); text && !util::trim(*text).empty()) holder = "pid " + std::string(util::trim(*text));
      return util::make_error(util::ErrorKind::timeout, "another nvte-doctor run is in progress (" + holder + " holds " +
                                                            file.string() + "); try again later or pass --wait");
    }
    return util::make_error(util::errno_kind(err), "cannot lock " + file.string() + ": " + util::errno_text(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) == 0) (void)::pwrite(fd.get(), pid.data(), pid.size(), 0);
  return RunLock(std::move(fd));
}

RunLock::~RunLock() {
  if (m_fd) (void)::ftruncate(m_fd.get(), 0);
}

double unix_now() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

} // namespace service
