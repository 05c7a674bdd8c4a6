// Templates are text with `{{...}}` holes. A hole holds a fact name or a call, parsed with the
// condition lexer, so the same names and did-you-mean hints apply. The key idea for commands:
// values from the node never reach a command unquoted (a venv path like `/opt/my env/$(x)` must
// stay one harmless word), and the pip wheel name follows the CUDA major the node actually uses.
#include "rules/templates.hpp"

#include "util/strings.hpp"

#include <algorithm>

namespace rules::detail {

namespace {

std::optional<Segment> fact_segment(const Token& token, std::size_t base, Template& t, SlotTable& table,
                                    std::vector<SourceError>& errors) {
  SourceError problem;
  auto spec = resolve_fact(token.text, table, problem);
  if (!spec) {
    problem.offset = base + token.offset;
    problem.length = token.length;
    errors.push_back(std::move(problem));
    return std::nullopt;
  }
  Segment s{Segment::Kind::fact, token.text, spec->collection, spec->field, {}};
  if (token.text.starts_with("workload.")) t.reads_workload = true;
  if (token.text.starts_with("explain.")) t.reads_explain = true;
  if (spec->collection >= 0 && std::find(t.collections.begin(), t.collections.end(), spec->collection) == t.collections.end())
    t.collections.push_back(spec->collection);
  return s;
}

// One hole: name | python | cudnn_path_fix | pip_install(arg[, arg]) | quote(name).
bool compile_hole(std::string_view inner, std::size_t base, Template& t, SlotTable& table, std::vector<SourceError>& errors) {
  auto tokens = tokenize(inner);
  auto fail = [&](const Token& at, std::string message, std::string hint = {}) {
    errors.push_back({base + at.offset, std::max<std::size_t>(at.length, 1), std::move(message), std::move(hint)});
    return false;
  };
  if (tokens.back().kind == TokenKind::error) return fail(tokens.back(), tokens.back().text);
  if (tokens[0].kind != TokenKind::name) return fail(tokens[0], "expected a fact name or a function in {{...}}");
  const Token& head = tokens[0];
  if (tokens.size() == 2) {
    if (head.text == "python") {
      t.segments.push_back({Segment::Kind::python, {}, -1, {}, {}});
      return true;
    }
    if (head.text == "cudnn_path_fix") {
      t.segments.push_back({Segment::Kind::cudnn_path_fix, {}, -1, {}, {}});
      return true;
    }
    auto s = fact_segment(head, base, t, table, errors);
    if (!s) return false;
    t.segments.push_back(std::move(*s));
    return true;
  }
  if (tokens[1].kind != TokenKind::lparen) return fail(tokens[1], "expected one name or a call in {{...}}");
  std::vector<Token> args;
  std::size_t i = 2;
  while (i < tokens.size() && tokens[i].kind != TokenKind::rparen) {
    if (!args.empty()) {
      if (tokens[i].kind != TokenKind::comma) return fail(tokens[i], "expected ',' or ')'");
      ++i;
    }
    if (tokens[i].kind != TokenKind::name && tokens[i].kind != TokenKind::string)
      return fail(tokens[i], "expected a quoted string or a fact name");
    args.push_back(tokens[i++]);
  }
  if (i >= tokens.size() || tokens[i].kind != TokenKind::rparen || tokens[i + 1].kind != TokenKind::end)
    return fail(tokens[std::min(i, tokens.size() - 1)], "expected ')' closing the call");
  Segment call;
  if (head.text == "pip_install") {
    if (args.empty() || args.size() > 2) return fail(head, "pip_install() takes a package and optionally a version", "pip_install('nvidia-cudnn', '9.3.0.75')");
    call.kind = Segment::Kind::pip_install;
  } else if (head.text == "quote") {
    if (args.size() != 1 || args[0].kind != TokenKind::name) return fail(head, "quote() takes one fact name");
    call.kind = Segment::Kind::quote;
  } else {
    return fail(head, "unknown template function '" + head.text + "'", "functions: python, pip_install, cudnn_path_fix, quote");
  }
  for (const auto& arg : args) {
    if (arg.kind == TokenKind::string) {
      call.args.push_back({Segment::Kind::text, arg.text, -1, {}, {}});
    } else {
      auto s = fact_segment(arg, base, t, table, errors);
      if (!s) return false;
      call.args.push_back(std::move(*s));
    }
  }
  t.segments.push_back(std::move(call));
  return true;
}

std::string value_text(const Segment& s, const SlotTable& table, const Scope& scope, Element element, bool* missing) {
  if (s.kind == Segment::Kind::text) return s.text;
  if (s.collection < 0) {
    const model::Value* v = scope.get(s.text);
    if (!v) {
      if (missing) *missing = true;
      return "(unknown)";
    }
    return v->to_string();
  }
  const std::string& prefix = table.collections()[static_cast<std::size_t>(s.collection)];
  auto element_value = [&](std::size_t i) -> std::optional<std::string> {
    const model::Value* v = scope.get(prefix + "[" + std::to_string(i) + "]." + s.field);
    if (!v) return std::nullopt;
    return v->to_string();
  };
  if (element.collection == s.collection) {
    if (auto v = element_value(element.index)) return *v;
    if (missing) *missing = true;
    return "(unknown)";
  }
  std::vector<std::string> values;
  for (std::size_t i = 0, n = scope.count(prefix); i < n; ++i) {
    auto v = element_value(i);
    if (v && std::find(values.begin(), values.end(), *v) == values.end()) values.push_back(*v);
  }
  if (values.empty()) {
    if (missing) *missing = true;
    return "(unknown)";
  }
  return util::join(values, ", ");
}

std::optional<std::string> text_of(const Scope& scope, std::string_view name) {
  const model::Value* v = scope.get(name);
  if (!v) return std::nullopt;
  return v->to_string();
}

// Removes separators left dangling by a helper that rendered empty ("a && " -> "a").
std::string tidy_command(std::string command) {
  auto trim_ends = [](std::string& s) {
    bool changed = true;
    while (changed) {
      changed = false;
      std::string t(util::trim(s));
      for (std::string_view sep : {"&&", ";"}) {
        if (t.ends_with(sep)) {
          t.erase(t.size() - sep.size());
          changed = true;
        }
        if (t.starts_with(sep)) {
          t.erase(0, sep.size());
          changed = true;
        }
      }
      s = std::string(util::trim(t));
    }
  };
  trim_ends(command);
  // An empty helper in the middle: "a &&  && b".
  for (std::size_t pos; (pos = command.find("&&  &&")) != std::string::npos;) command.replace(pos, 6, "&&");
  return command;
}

} // namespace

std::optional<Template> compile_template(std::string_view text, SlotTable& table, std::vector<SourceError>& errors) {
  Template t;
  std::size_t before = errors.size();
  std::size_t i = 0;
  while (i < text.size()) {
    auto open = text.find("{{", i);
    if (open == std::string_view::npos) {
      t.segments.push_back({Segment::Kind::text, std::string(text.substr(i)), -1, {}, {}});
      break;
    }
    if (open > i) t.segments.push_back({Segment::Kind::text, std::string(text.substr(i, open - i)), -1, {}, {}});
    auto close = text.find("}}", open + 2);
    if (close == std::string_view::npos) {
      errors.push_back({open, 2, "'{{' without a closing '}}'", {}});
      break;
    }
    compile_hole(text.substr(open + 2, close - open - 2), open + 2, t, table, errors);
    i = close + 2;
  }
  if (errors.size() != before) return std::nullopt;
  return t;
}

std::string render_template(const Template& t, const SlotTable& table, const Scope& scope, Element element, RenderMode mode) {
  std::string out;
  bool command = mode == RenderMode::command;
  for (const auto& s : t.segments) {
    switch (s.kind) {
    case Segment::Kind::text: out += s.text; break;
    case Segment::Kind::fact: {
      if (command && s.collection >= 0 && element.collection != s.collection) {
        // A whole collection in a command is a list of arguments: each value its own word
        // (`pip install {{te.requirements.missing.requirement}}`).
        std::string joined = value_text(s, table, scope, element, nullptr);
        std::vector<std::string> words;
        const std::string& prefix = table.collections()[static_cast<std::size_t>(s.collection)];
        for (std::size_t i = 0, n = scope.count(prefix); i < n; ++i) {
          const model::Value* v = scope.get(prefix + "[" + std::to_string(i) + "]." + s.field);
          if (v && std::find(words.begin(), words.end(), util::shell_quote(v->to_string())) == words.end())
            words.push_back(util::shell_quote(v->to_string()));
        }
        out += words.empty() ? util::shell_quote(joined) : util::join(words, " ");
        break;
      }
      std::string v = value_text(s, table, scope, element, nullptr);
      out += command ? util::shell_quote(v) : v;
      break;
    }
    case Segment::Kind::quote: out += util::shell_quote(value_text(s.args[0], table, scope, element, nullptr)); break;
    case Segment::Kind::python: out += python_command(scope); break;
    case Segment::Kind::cudnn_path_fix: out += cudnn_path_fix(scope); break;
    case Segment::Kind::pip_install: {
      std::string package = value_text(s.args[0], table, scope, element, nullptr);
      std::string version = s.args.size() > 1 ? value_text(s.args[1], table, scope, element, nullptr) : "";
      out += pip_install_command(scope, package, version);
      break;
    }
    }
  }
  return command ? tidy_command(std::move(out)) : out;
}

std::string python_command(const Scope& scope) {
  // Rendered for most fixes of every explain: read the facts in place rather than copy them.
  auto string_fact = [&](std::string_view name) -> std::optional<std::string_view> {
    const model::Value* v = scope.get(name);
    if (!v || !v->is(model::ValueType::string)) return std::nullopt;
    return std::string_view(v->as_string());
  };
  auto exe = string_fact("python.executable");
  if (!exe || exe->empty() || *exe == "python3") return "python3";
  auto slash = exe->rfind('/');
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : exe->substr(0, slash);
  std::string_view base = slash == std::string_view::npos ? *exe : exe->substr(slash + 1);
  auto kind = string_fact("python.env_kind");
  if (base == "python3" && (!kind || *kind == "system")) {
    if (auto path = string_fact("env.PATH")) {
      for (auto entry : util::split(*path, ':'))
        if (entry == dir) return "python3";
    } else if (dir == "/usr/bin" || dir == "/bin" || dir == "/usr/local/bin") {
      return "python3";
    }
  }
  return util::shell_quote(*exe);
}

std::string pip_install_command(const Scope& scope, std::string_view package, std::string_view version) {
  long cuda_major = 0;
  for (std::string_view name : {"torch.cuda_version", "cuda.runtime_version", "driver.cuda_version"}) {
    const model::Value* v = scope.get(name);
    if (v && v->is(model::ValueType::version)) {
      cuda_major = v->as_version().major();
      break;
    }
  }
  if (cuda_major <= 0) cuda_major = 12; // the wheels most installs use; documented
  std::string wheel(package);
  if (package == "nvidia-cudnn" || package == "nvidia-nccl") wheel += "-cu" + std::to_string(cuda_major);
  // CUDA 13's runtime wheels dropped the suffix: nvidia-cuda-nvrtc, nvidia-cublas.
  if ((package == "nvidia-cuda-nvrtc" || package == "nvidia-cublas") && cuda_major <= 12) wheel += "-cu" + std::to_string(cuda_major);
  if (!version.empty()) wheel += "==" + std::string(version);
  return python_command(scope) + " -m pip install " + util::shell_quote(wheel);
}

std::string cudnn_path_fix(const Scope& scope) {
  auto site = text_of(scope, "python.site_packages");
  if (!site || site->empty()) return "";
  std::string wheel = *site + "/nvidia/cudnn";
  auto te_path = text_of(scope, "te.cudnn.path");
  if (te_path && te_path->starts_with(wheel + "/")) return "";
  // TE >= 2.4 looks in CUDNN_HOME / CUDNN_PATH, then CUDA_HOME / CUDA_PATH / /usr/local/cuda,
  // before site-packages; a copy found there keeps winning over a freshly installed wheel.
  auto cudnn_home = text_of(scope, "env.CUDNN_HOME");
  bool earlier = cudnn_home.has_value() || text_of(scope, "env.CUDNN_PATH").has_value();
  if (te_path && !earlier) {
    std::vector<std::string> cuda_homes;
    for (std::string_view name : {"env.CUDA_HOME", "env.CUDA_PATH", "cuda.toolkit_path"})
      if (auto v = text_of(scope, name)) cuda_homes.push_back(*v);
    cuda_homes.emplace_back("/usr/local/cuda");
    for (const auto& home : cuda_homes) {
      if (!home.empty() && te_path->starts_with(home + "/")) earlier = true;
    }
    // TE 2.11+ dlopens "libcudnn.so" (the loader's cache, LD_LIBRARY_PATH, the system
    // directories) before the wheels: a system copy found that way also wins over the wheel
    // (the reference node: TE 2.15 on /usr/lib/x86_64-linux-gnu's 9.14, torch on the 9.19 wheel).
    bool loader_before_wheel = false;
    if (auto te_version = text_of(scope, "te.version")) {
      if (auto v = model::Version::parse(*te_version)) loader_before_wheel = *v >= model::Version{2, 11};
    }
    for (std::size_t i = 0, n = scope.count("cudnn.copies"); i < n; ++i) {
      std::string base = "cudnn.copies[" + std::to_string(i) + "]";
      if (text_of(scope, base + ".path") != te_path) continue;
      auto source = text_of(scope, base + ".source").value_or("");
      if (source == "cuda_home") earlier = true;
      if (loader_before_wheel && (source == "system" || source == "ld_cache" || source == "ld_library_path")) earlier = true;
    }
  }
  if (!earlier) return "";
  std::string out = cudnn_home ? "unset CUDNN_HOME && " : "";
  return out + "export CUDNN_PATH=" + util::shell_quote(wheel);
}

} // namespace rules::detail
