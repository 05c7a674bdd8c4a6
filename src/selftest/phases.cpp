#include "selftest/phases.hpp"

#include "util/json_text.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

#include <algorithm>

namespace selftest {

bool is_cudnn_plan_or_execute(std::string_view p) { return p == phase::plan || p == phase::execute; }

bool is_cudnn_call(std::string_view p) { return p == phase::load || p == phase::graph || is_cudnn_plan_or_execute(p); }

Progress::Progress(int fd) : m_fd(fd), m_start(std::chrono::steady_clock::now()) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
}

void Progress::write(const Json& event) {
  // Called with m_mutex held: the lines of two threads never interleave.
  if (m_fd >= 0) util::write_all(m_fd, util::json_text(event) + "\n");
}

void Progress::begin(std::string_view name, std::string_view what) {
  std::lock_guard lock(m_mutex);
  double t = elapsed();
  std::string key = what.empty() ? std::string(name) : std::string(name) + " " + std::string(what);
  m_began.emplace_back(key, t);
  write(Json{{"event", "begin"}, {"phase", name}, {"what", what}, {"t", t}});
}

void Progress::end(std::string_view name, std::string_view what) {
  std::lock_guard lock(m_mutex);
  double t = elapsed();
  std::string key = what.empty() ? std::string(name) : std::string(name) + " " + std::string(what);
  auto it = std::find_if(m_began.begin(), m_began.end(), [&](const auto& b) { return b.first == key; });
  if (it != m_began.end()) {
    // A phase may run more than once (a plan per heuristics mode): its time adds up.
    m_seconds[key] = m_seconds.value(key, 0.0) + (t - it->second);
    m_began.erase(it);
  }
  write(Json{{"event", "end"}, {"phase", name}, {"what", what}, {"t", t}});
}

void Progress::part(std::string_view name, const Json& result) {
  std::lock_guard lock(m_mutex);
  write(Json{{"event", "part"}, {"name", name}, {"t", elapsed()}, {"result", result}});
}

Json Progress::seconds() const {
  std::lock_guard lock(m_mutex);
  return m_seconds;
}

Progress::Scope Progress::phase(std::string_view name, std::string_view what) { return Scope(*this, name, what); }

Progress::Scope::Scope(Progress& progress, std::string_view phase, std::string_view what)
    : m_progress(&progress), m_phase(phase), m_what(what) {
  m_progress->begin(m_phase, m_what);
}

Progress::Scope::~Scope() { end(); }

void Progress::Scope::end() {
  if (!m_progress) return;
  m_progress->end(m_phase, m_what);
  m_progress = nullptr;
}

const PhaseSpan* ChildStream::current() const {
  const PhaseSpan* latest = nullptr;
  for (const auto& p : phases) {
    if (p.open && (!latest || p.start >= latest->start)) latest = &p;
  }
  return latest;
}

std::string ChildStream::open_phases() const {
  std::vector<std::string> names;
  for (const auto& p : phases) {
    if (p.open) names.push_back(p.what.empty() ? p.phase : p.phase + " (" + p.what + ")");
  }
  return util::join(names, ", ");
}

const ChildStream::Part* ChildStream::part(std::string_view name) const {
  for (const auto& p : parts) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

ChildStream parse_child_stream(std::string_view out) {
  ChildStream stream;
  for (auto raw : util::split(out, '\n')) {
    auto line = util::trim(raw);
    if (line.empty()) continue;
    Json object = Json::parse(line, nullptr, false);
    if (object.is_discarded() || !object.is_object()) {
      if (stream.malformed.empty()) stream.malformed = std::string(line.substr(0, 200));
      continue;
    }
    std::string event = object.contains("event") && object["event"].is_string() ? object["event"].get<std::string>() : "";
    double t = object.contains("t") && object["t"].is_number() ? object["t"].get<double>() : stream.last_event;
    if (event.empty()) {
      stream.result = std::move(object); // the last such line wins; the protocol has one
      continue;
    }
    stream.last_event = std::max(stream.last_event, t);
    std::string name = object.value("phase", "");
    std::string what = object.contains("what") && object["what"].is_string() ? object["what"].get<std::string>() : "";
    if (event == "begin") {
      stream.phases.push_back(PhaseSpan{name, what, t, 0, true});
    } else if (event == "end") {
      for (auto it = stream.phases.rbegin(); it != stream.phases.rend(); ++it) {
        if (it->open && it->phase == name && it->what == what) {
          it->open = false;
          it->seconds = t - it->start;
          break;
        }
      }
    } else if (event == "part" && object.contains("result")) {
      stream.parts.push_back({object.value("name", ""), t, object["result"]});
    }
  }
  for (auto& p : stream.phases) {
    if (p.open) p.seconds = stream.last_event - p.start;
  }
  return stream;
}

} // namespace selftest
