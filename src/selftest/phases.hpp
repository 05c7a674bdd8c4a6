// The phases a self-test child goes through, reported to the parent as it goes (the protocol in
// selftest.hpp), so that a child killed at its timeout or by a signal is known to have been
// loading a library, building a cuDNN plan, executing, or computing the doctor's own reference.
//
// The child writes one JSON object per line to its result descriptor: phase events
// {"event":"begin"|"end","phase":"plan","what":"backward","t":0.41} (t: seconds since the child
// started), parts of the answer that are complete before the rest
// {"event":"part","name":"forward","result":{...}}, and, last, the result object (the one line
// with "status" and no "event"). Every line is written with one write() as it happens, so what
// was written before a SIGKILL reaches the parent. Phases may overlap (threads): the parent knows
// which were open at the end.
#pragma once

#include "util/result.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace selftest {

using Json = nlohmann::ordered_json;

// Phase names the checks use. A rule may only blame cuDNN for a child that ended in one of cuDNN's
// own phases (is_cudnn_call).
// The constants are named as the phases they stand for (phase::plan reads as the phase at the
// call), not k_-prefixed as other constants are.
// NOLINTBEGIN(readability-identifier-naming)
namespace phase {
inline constexpr std::string_view load = "load";           // dlopen of a vendor library
inline constexpr std::string_view init = "init";           // cuInit, contexts, free memory
inline constexpr std::string_view graph = "graph";         // cuDNN descriptors of the graph
inline constexpr std::string_view plan = "plan";           // cuDNN heuristics + plan finalize (runtime compilation)
inline constexpr std::string_view execute = "execute";     // cuDNN's kernels (cudnnBackendExecute)
inline constexpr std::string_view reference = "reference"; // the doctor's fp32 reference (compile, kernels)
inline constexpr std::string_view compare = "compare";     // comparing the outputs with the reference
inline constexpr std::string_view compile = "compile";     // NVRTC compilation (the nvrtc check)
inline constexpr std::string_view launch = "launch";       // module load and kernel launch (the nvrtc check)
inline constexpr std::string_view comm = "comm";           // NCCL communicator initialisation
inline constexpr std::string_view allreduce = "allreduce"; // NCCL all-reduce
} // namespace phase
// NOLINTEND(readability-identifier-naming)

// True for the phases spent inside cuDNN calls whose hang or crash is cuDNN's: plan build and
// execution (and, for a crash, also loading the library and building the graph).
bool is_cudnn_plan_or_execute(std::string_view phase);
bool is_cudnn_call(std::string_view phase);

// The child's side: writes the events to fd (-1: keeps them only in memory, for checks run
// in-process). Thread-safe.
class Progress {
public:
  explicit Progress(int fd = -1);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A phase that ends when the scope does.
  class Scope {
  public:
    Scope(Progress& progress, std::string_view phase, std::string_view what);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    void end(); // earlier than the destructor; once

  private:
    Progress* m_progress;
    std::string m_phase, m_what;
  };
  [[nodiscard]] Scope phase(std::string_view name, std::string_view what = {});
  void begin(std::string_view name, std::string_view what = {});
  void end(std::string_view name, std::string_view what = {});
  // A complete part of the answer (the forward's result before the backward runs).
  void part(std::string_view name, const Json& result);
  // Seconds since this object was made (the child's start).
  double elapsed() const;
  // {"plan forward": 0.61, ...}: the seconds of every phase that ended, for the result object.
  Json seconds() const;

private:
  void write(const Json& event);

  int m_fd;
  std::chrono::steady_clock::time_point m_start;
  mutable std::mutex m_mutex;
  std::vector<std::pair<std::string, double>> m_began; // "plan forward" -> t, while open
  Json m_seconds = Json::object();
};

// One phase as the parent reconstructs it from the events.
struct PhaseSpan {
  std::string phase;
  std::string what;   // "forward", "backward", "" ...
  double start = 0;   // seconds since the child started
  double seconds = 0; // until its end, or until the child's last event when still open
  bool open = false;  // begun and never ended: the child was in it at the end
  std::string name() const { return what.empty() ? phase : phase + " " + what; }
};

// What the parent read from a child's result descriptor.
struct ChildStream {
  std::vector<PhaseSpan> phases;  // in order of beginning
  struct Part {
    std::string name;
    double t = 0; // when the child streamed it
    Json result;
  };
  std::vector<Part> parts;
  std::optional<Json> result;     // the final object, when the child wrote one
  std::string malformed;          // the first line that is not a protocol object, if any
  double last_event = 0;          // t of the last event

  // The open phase begun last (the child was there when it ended), or "" when none was open.
  const PhaseSpan* current() const;
  // "plan (backward), reference (compile)": every open phase, for an error message.
  std::string open_phases() const;
  const Part* part(std::string_view name) const;
};

ChildStream parse_child_stream(std::string_view out);

} // namespace selftest
