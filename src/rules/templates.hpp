// Message and fix-command templates (internal to src/rules): `{{fact.name}}` and the functions
// python, pip_install(pkg[, version]), cudnn_path_fix and quote(fact), compiled and checked at
// load time, rendered for one node (and one collection element) when a rule fires. In commands
// every value taken from the node is shell-quoted.
#pragma once

#include "rules/condition.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace rules::detail {

struct Segment {
  enum class Kind { text, fact, python, pip_install, cudnn_path_fix, quote } kind = Kind::text;
  std::string text;              // literal text, or the fact name
  int collection = -1;           // for collection-relative fact names
  std::string field;             // their field
  std::vector<Segment> args;     // pip_install's arguments: text (literal) or fact segments
};

struct Template {
  std::vector<Segment> segments;
  bool reads_workload = false;
  bool reads_explain = false;
  std::vector<int> collections; // collections named without an index
};

// What rendering reads: facts by concrete name, and collection sizes.
class Scope {
public:
  virtual const model::Value* get(std::string_view name) const = 0;
  virtual std::size_t count(std::string_view collection) const = 0;

protected:
  ~Scope() = default;
};

// The collection element a per-element rule fired for (collection -1: none).
struct Element {
  int collection = -1;
  std::size_t index = 0;
};

enum class RenderMode { message, command };

// Compiles a template; unknown names, unknown functions and bad syntax are appended to errors.
std::optional<Template> compile_template(std::string_view text, SlotTable& table, std::vector<SourceError>& errors);

// Renders for a node. A collection-relative name renders the current element's value, or the
// values of every element joined by ", " outside that collection's rule.
std::string render_template(const Template& t, const SlotTable& table, const Scope& scope, Element element, RenderMode mode);

// The interpreter for commands: python.executable shell-quoted, or `python3` when it is the
// system python3 on PATH or unknown.
std::string python_command(const Scope& scope);
// "python3 -m pip install nvidia-cudnn-cu12==9.3.0.75" with the wheel's -cuNN suffix.
std::string pip_install_command(const Scope& scope, std::string_view package, std::string_view version);
// `export CUDNN_PATH=<site-packages>/nvidia/cudnn` when TE would still load another cuDNN than
// the pip wheel after installing it, else "".
std::string cudnn_path_fix(const Scope& scope);

} // namespace rules::detail
