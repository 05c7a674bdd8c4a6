// CLI end-to-end cases: each entry of tests/cli/cases/*.yaml runs the built nvte-doctor as a user
// would and checks its exit code, output text and JSON. One gtest per case, named by file and
// case. Placeholders in args: {fixtures} (tests/fixtures), {tmp} (a fresh temporary directory),
// {rules} (the shipped rules directory), {source} (the source tree), {binary} (the built binary).
//
// Case keys: name, args (list), exit (int), stdout_contains / stderr_contains / stdout_lacks / stderr_lacks
// (lists of substrings), stderr_lines (exact number of stderr lines), stdout_lines_max (at most so
// many stdout lines), stdout_first_line (the exact first line), json (map of dotted path ->
// expected JSON value, checked on stdout), files_absent (paths that must not exist afterwards),
// env (map of extra environment variables), files (map of path -> content written before the
// run), copies (map of path -> file copied there before the run, {binary} being the built
// nvte-doctor; the copy keeps its permissions), program (run this file instead of the built binary,
// e.g. a copy), setup (list of argument lists run with the binary first, any exit code), shell
// (sh commands run first, each must succeed), after_shell (sh commands that must succeed after the
// run), files_present, report_files (report JSON files validated against the shipped schema). A
// stdout that is a report JSON (it has "tool" and "summary") is always validated against the
// schema; one of explain (it has "schema_version" and "workloads", and no "tool") against
// explain.schema.json; selftest's (it has "schema_version" and "selftest") against
// selftest.schema.json; fleet's (it has "configurations" and "exit_code") against
// fleet.schema.json; rules list, show and lint's (they have "rules_digest", or "directories" and
// "problems") against rules.schema.json.
#include "support/report_schema.hpp"
#include "util/file.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Case {
  std::string file;
  std::string name;
  YAML::Node node;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  fs::path dir = fs::path(NVTE_TESTS_DIR) / "cli" / "cases";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    YAML::Node doc = YAML::LoadFile(file.string());
    for (const auto& node : doc) cases.push_back({file.stem().string(), node["name"].as<std::string>(), node});
  }
  return cases;
}

// Follows "a.b[0].c" through a JSON document; nullptr when a step is missing.
const json* at_path(const json& doc, const std::string& path) {
  const json* node = &doc;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') ++i;
    if (path[i] == '[') {
      auto close = path.find(']', i);
      std::size_t index = std::stoul(path.substr(i + 1, close - i - 1));
      if (!node->is_array() || index >= node->size()) return nullptr;
      node = &(*node)[index];
      i = close + 1;
      continue;
    }
    auto end = path.find_first_of(".[", i);
    std::string key = path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    i = end == std::string::npos ? path.size() : end;
  }
  return node;
}

json yaml_to_json(const YAML::Node& node) {
  if (node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  if (node.IsMap()) {
    json out = json::object();
    for (const auto& item : node) out[item.first.as<std::string>()] = yaml_to_json(item.second);
    return out;
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text; // quoted scalar: a string
  if (text == "true" || text == "false") return text == "true";
  if (text == "null" || text == "~") return nullptr;
  try {
    std::size_t used = 0;
    long long i = std::stoll(text, &used);
    if (used == text.size()) return i;
    double d = std::stod(text, &used);
    if (used == text.size()) return d;
  } catch (...) {
  }
  return text;
}

class CliCase : public testing::TestWithParam<Case> {};

TEST_P(CliCase, Runs) {
  const Case& c = GetParam();
  fs::path tmp = fs::temp_directory_path() / ("nvte-cli-" + std::to_string(::getpid()) + "-" + c.file);
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto expand = [&](std::string s) {
    s = replace_all(s, "{fixtures}", std::string(NVTE_TESTS_DIR) + "/fixtures");
    s = replace_all(s, "{rules}", std::string(NVTE_SOURCE_DIR) + "/rules");
    s = replace_all(s, "{source}", NVTE_SOURCE_DIR);
    s = replace_all(s, "{tmp}", tmp.string());
    s = replace_all(s, "{binary}", NVTE_BINARY);
    return s;
  };
  std::vector<std::string> argv = {c.node["program"] ? expand(c.node["program"].as<std::string>()) : std::string(NVTE_BINARY)};
  for (const auto& arg : c.node["args"]) argv.push_back(expand(arg.as<std::string>()));
  util::CommandOptions options;
  options.timeout = std::chrono::seconds(60);
  std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"}, {"HOME", tmp.string()}, {"NO_COLOR", "1"}};
  if (c.node["env"]) {
    for (const auto& item : c.node["env"]) env[item.first.as<std::string>()] = expand(item.second.as<std::string>());
  }
  options.environment = env;
  for (const auto& file : c.node["files"]) {
    fs::path path = expand(file.first.as<std::string>());
    fs::create_directories(path.parent_path());
    ASSERT_TRUE(util::write_file_atomic(path, expand(file.second.as<std::string>())).ok()) << path;
  }
  for (const auto& copy : c.node["copies"]) {
    fs::path path = expand(copy.first.as<std::string>());
    fs::create_directories(path.parent_path());
    std::error_code ec;
    fs::copy_file(expand(copy.second.as<std::string>()), path, fs::copy_options::overwrite_existing, ec);
    ASSERT_FALSE(ec) << path << ": " << ec.message();
  }
  // Shell commands that make what a case file cannot write (FIFOs, links, modes).
  for (const auto& command : c.node["shell"]) {
    auto ran = util::run_command({"/bin/sh", "-c", expand(command.as<std::string>())}, options);
    ASSERT_TRUE(ran.ok() && ran->exit_code.value_or(-1) == 0) << "shell failed: " << command.as<std::string>();
  }
  for (const auto& setup : c.node["setup"]) {
    std::vector<std::string> setup_argv = {NVTE_BINARY};
    for (const auto& arg : setup) setup_argv.push_back(expand(arg.as<std::string>()));
    auto ran = util::run_command(setup_argv, options);
    ASSERT_TRUE(ran.ok() && !ran->timed_out) << "setup failed";
  }
  auto run = util::run_command(argv, options);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const auto& r = *run;
  std::string context = "\n--- stdout ---\n" + r.out.substr(0, 4000) + "\n--- stderr ---\n" + r.err.substr(0, 4000);
  ASSERT_FALSE(r.timed_out) << context;
  if (c.node["exit"]) {
    EXPECT_EQ(r.exit_code.value_or(-1), c.node["exit"].as<int>()) << context;
  }
  for (const auto& s : c.node["stdout_contains"]) EXPECT_NE(r.out.find(expand(s.as<std::string>())), std::string::npos) << "stdout lacks '" << s.as<std::string>() << "'" << context;
  for (const auto& s : c.node["stdout_lacks"]) EXPECT_EQ(r.out.find(expand(s.as<std::string>())), std::string::npos) << "stdout has '" << s.as<std::string>() << "'" << context;
  for (const auto& s : c.node["stderr_lacks"])
    EXPECT_EQ(r.err.find(expand(s.as<std::string>())), std::string::npos) << "stderr has '" << s.as<std::string>() << "'" << context;
  for (const auto& s : c.node["stderr_contains"]) EXPECT_NE(r.err.find(expand(s.as<std::string>())), std::string::npos) << "stderr lacks '" << s.as<std::string>() << "'" << context;
  if (c.node["stdout_lines_max"]) {
    EXPECT_LE(std::count(r.out.begin(), r.out.end(), '\n'), c.node["stdout_lines_max"].as<int>()) << context;
  }
  if (c.node["stdout_first_line"]) {
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')), c.node["stdout_first_line"].as<std::string>()) << context;
  }
  if (c.node["stderr_lines"]) {
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), c.node["stderr_lines"].as<int>()) << context;
  }
  if (c.node["json"]) {
    json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << "stdout is not JSON" << context;
    for (const auto& item : c.node["json"]) {
      std::string path = item.first.as<std::string>();
      const json* got = at_path(doc, path);
      json want = yaml_to_json(item.second);
      if (want.is_string() && want.get<std::string>() == "<present>") {
        EXPECT_NE(got, nullptr) << path << " missing";
        continue;
      }
      ASSERT_NE(got, nullptr) << path << " missing" << context;
      EXPECT_EQ(*got, want) << "at " << path;
    }
  }
  if (json doc = json::parse(r.out, nullptr, false); doc.is_object() && doc.contains("tool") && doc.contains("summary")) {
    EXPECT_VALID_REPORT_JSON(r.out);
  } else if (doc.is_object() && doc.contains("configurations") && doc.contains("exit_code")) {
    EXPECT_VALID_JSON_FOR(r.out, "fleet.schema.json");
  } else if (doc.is_object() && (doc.contains("rules_digest") || (doc.contains("directories") && doc.contains("problems")))) {
    EXPECT_VALID_JSON_FOR(r.out, "rules.schema.json");
  } else if (doc.is_object() && doc.contains("schema_version") && doc.contains("workloads")) {
    EXPECT_VALID_JSON_FOR(r.out, "explain.schema.json");
  } else if (doc.is_object() && doc.contains("schema_version") && doc.contains("selftest")) {
    EXPECT_VALID_JSON_FOR(r.out, "selftest.schema.json");
  }
  for (const auto& f : c.node["report_files"]) {
    auto text = util::read_file(expand(f.as<std::string>()));
    ASSERT_TRUE(text.ok()) << f.as<std::string>();
    EXPECT_VALID_REPORT_JSON(*text);
  }
  // Shell commands that must succeed after the run (test -L, test -c: what became of a path).
  for (const auto& command : c.node["after_shell"]) {
    auto ran = util::run_command({"/bin/sh", "-c", expand(command.as<std::string>())}, options);
    EXPECT_TRUE(ran.ok() && ran->exit_code.value_or(-1) == 0) << "after the run, this failed: " << command.as<std::string>() << context;
  }
  for (const auto& f : c.node["files_absent"]) EXPECT_FALSE(fs::exists(expand(f.as<std::string>()))) << f.as<std::string>();
  for (const auto& f : c.node["files_present"]) EXPECT_TRUE(fs::exists(expand(f.as<std::string>()))) << f.as<std::string>();
  fs::remove_all(tmp);
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string name = info.param.file + "_" + info.param.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, CliCase, testing::ValuesIn(load_cases()), case_name);

} // namespace
