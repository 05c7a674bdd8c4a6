// Security through the real binary: node data that reaches a fix command (an interpreter path
// or site-packages with spaces, quotes and $(...)) comes out as one safely quoted shell word, and
// rules are data: shell text in a rule's message or fix is printed, never run.
#include "doctor_runner.hpp"
#include "util/file.hpp"

#include <gtest/gtest.h>

namespace fs = std::filesystem;
using nlohmann::json;
using reliability::run_doctor;
using reliability::TempDir;

namespace {

std::vector<std::string> fix_commands(const json& report) {
  std::vector<std::string> commands;
  for (const auto& finding : report.value("findings", json::array())) {
    for (const auto& fix : finding.value("fixes", json::array())) {
      if (fix.contains("command") && fix["command"].is_string()) commands.push_back(fix["command"]);
    }
  }
  return commands;
}

TEST(FixCommands, NodeDataIsQuoted) {
  TempDir dir("quote");
  const std::string pwned = (dir / "pwned").string();
  const std::string venv = "/opt/my venv/it's \"$(/usr/bin/touch " + pwned + ")\" `/usr/bin/touch " + pwned + "`";
  const std::string python = venv + "/bin/python3";
  auto run = run_doctor({"check", "--format", "json", "--facts", std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json",
                         "--set", "te.version=2.3.0", "--set", "cudnn.version=9.1.0", "--set", "python.executable=" + python,
                         "--set", "python.site_packages=" + venv + "/lib/python3.12/site-packages",
                         "--set", "te.cudnn.path=/usr/local/cuda/lib64/libcudnn.so.9"});
  ASSERT_GE(run.exit_code, 0) << reliability::context(run);
  json report = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << reliability::context(run);
  std::size_t with_python = 0;
  for (const auto& command : fix_commands(report)) {
    if (command.find("my venv") == std::string::npos) continue;
    // Run it as a user pasting it would, with nothing on PATH: an unquoted $(...) or `...` would
    // create the file; a quoted interpreter path is one word that does not exist.
    util::CommandOptions options;
    options.environment = std::map<std::string, std::string>{{"PATH", "/nonexistent"}};
    options.timeout = std::chrono::seconds(10);
    auto shell = util::run_command({"/bin/bash", "-c", command}, options);
    ASSERT_TRUE(shell.ok());
    EXPECT_FALSE(fs::exists(pwned)) << "a fix command ran node data as code: " << command;
    if (command.find(python) != std::string::npos || command.rfind("'/opt/my venv", 0) == 0) {
      ++with_python;
      EXPECT_NE(shell->err.find(python + ": No such file or directory"), std::string::npos)
          << "the interpreter path was not passed as one word: " << command << "\n" << shell->err;
    }
  }
  EXPECT_GE(with_python, 1u) << "no fix command used the interpreter; the test lost its subject" << reliability::context(run);
}

TEST(Rules, ShellTextInTemplatesIsOnlyText) {
  TempDir dir("rulesdata");
  const std::string marker = (dir / "ran").string();
  fs::create_directories(dir / "rules");
  std::string rule = R"yaml(rules:
  - id: shell-text-is-data
    title: "Shell text $(touch MARK) is data"
    severity: warning
    area: test
    when: has(driver.version)
    message: "run `touch MARK` and $(touch MARK) on {{driver.version}}"
    fixes:
      - kind: config
        command: "echo $(touch MARK) `touch MARK`; touch MARK"
        description: "$(touch MARK)"
    references: [https://example.com/rules-are-data]
    tests:
      fires: [{driver.version: 550.54.15}]
      quiet: [{gpu.count: 0}]
)yaml";
  for (std::size_t pos; (pos = rule.find("MARK")) != std::string::npos;) rule.replace(pos, 4, marker);
  ASSERT_TRUE(util::write_file_atomic(dir / "rules" / "shell.yaml", rule).ok());
  auto run = run_doctor({"check", "--format", "json", "--rules-only", (dir / "rules").string(), "--facts",
                         std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json"});
  EXPECT_EQ(run.exit_code, 1) << reliability::context(run);
  EXPECT_FALSE(fs::exists(marker)) << reliability::context(run);
  json report = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << reliability::context(run);
  auto commands = fix_commands(report);
  ASSERT_EQ(commands.size(), 1u) << reliability::context(run);
  EXPECT_EQ(commands[0], "echo $(touch " + marker + ") `touch " + marker + "`; touch " + marker);
  EXPECT_NE(run.out.find("$(touch " + marker + ") on 580.159.04"), std::string::npos) << reliability::context(run);
  auto text = run_doctor(
      {"check", "--rules-only", (dir / "rules").string(), "--facts", std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json"});
  EXPECT_NE(text.out.find("$(touch " + marker + ")"), std::string::npos) << reliability::context(text);
  EXPECT_FALSE(fs::exists(marker));
}

} // namespace
