// The reference node with TE 2.15 as issue 25 met it (fixture h100-node + overlay h100-node-te),
// probed and run through the shipped rules and the fix search: the import-order finding names
// both orders and gets `export CUDNN_PATH=<venv>/nvidia/cudnn` verified by re-running TE's search;
// the missing pydantic is an error with the node interpreter's pip command.
#include "support/shipped_rules.hpp"
#include "probe/node_probes.hpp"
#include "probe/relink.hpp"
#include "rules/fix_search.hpp"
#include "support/node_fixture.hpp"
#include "util/file.hpp"
#include "support/probe_helpers.hpp"

#include <cstdlib>

#include <gtest/gtest.h>

#include <algorithm>

using test_support::NodeFixture;

using test_support::find;

namespace {

const rules::RuleSet& shipped() { return test_support::shipped_rules(); }

model::Facts probe_te_node(const probe::Host& host) {
  model::Facts facts;
  probe::run_env_probe(host, facts);
  probe::run_python_probe(host, facts);
  probe::run_libraries_probe(host, facts);
  facts.derive();
  return facts;
}

rules::SearchOptions with_relink() {
  rules::SearchOptions o;
  o.relink = [](model::Facts& f, std::string_view lib) { probe::relink_from_facts(f, lib); };
  return o;
}

const std::string k_wheel_dir = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn";

} // namespace

TEST(TeNodeRules, ImportOrderFindingAndItsVerifiedCudnnPathFix) {
  NodeFixture node("h100-node", "h100-node-te");
  model::Facts facts = probe_te_node(node.host());
  auto findings = rules::evaluate_node(shipped(), facts);
  const model::Finding* order = find(findings, "cudnn-te-import-first-breaks-torch");
  ASSERT_NE(order, nullptr);
  EXPECT_EQ(order->severity, model::Severity::error);
  // Both orders and their consequences, with the node's versions.
  EXPECT_NE(order->message.find("`import torch` first"), std::string::npos) << order->message;
  EXPECT_NE(order->message.find("`import transformer_engine` first"), std::string::npos) << order->message;
  EXPECT_NE(order->message.find("TE on 9.14.0"), std::string::npos) << order->message;
  EXPECT_NE(order->message.find("found runtime version 9.14.0"), std::string::npos) << order->message;
  EXPECT_EQ(order->message.find("torch's copy"), std::string::npos) << order->message;
  // The warning about different copies gives way to the error.
  EXPECT_EQ(find(findings, "cudnn-torch-and-te-load-different-copies"), nullptr);

  auto fixes = rules::search_fixes(shipped(), facts, nullptr, *order, with_relink());
  auto fix = std::find_if(fixes.begin(), fixes.end(), [](const model::Fix& f) { return f.command.find("CUDNN_PATH") != std::string::npos; });
  ASSERT_NE(fix, fixes.end());
  EXPECT_EQ(fix->command, "export CUDNN_PATH=" + k_wheel_dir);
  ASSERT_TRUE(fix->verified.has_value()) << fix->unverified_reason;
  EXPECT_EQ(fix->verified->clears, "cudnn-te-import-first-breaks-torch");
  // A cuDNN wheel older than the one torch was built against (9.19) is no fix: torch would
  // reject it in either order.
  for (const auto& f : fixes) {
    if (!f.verified) continue;
    for (const auto& [name, value] : f.changes) {
      if (name != "package.nvidia_cudnn.version" && name != "cudnn.version") continue;
      auto v = model::Version::parse(value);
      ASSERT_TRUE(v.ok()) << value;
      EXPECT_GE(*v, (model::Version{9, 19})) << f.command;
    }
  }

  // The same change made on the node: the probe agrees with the fix search's model.
  probe::Host host = node.host();
  host.env["CUDNN_PATH"] = k_wheel_dir;
  model::Facts after = probe_te_node(host);
  auto after_findings = rules::evaluate_node(shipped(), after);
  EXPECT_EQ(find(after_findings, "cudnn-te-import-first-breaks-torch"), nullptr);
  EXPECT_EQ(find(after_findings, "cudnn-torch-and-te-load-different-copies"), nullptr);
  model::Facts relinked = facts;
  relinked.set("env.CUDNN_PATH", k_wheel_dir);
  probe::relink_from_facts(relinked, "cudnn");
  for (const char* name : {"te.cudnn.path", "te.cudnn.torch_first.path", "torch.cudnn.te_first.path", "torch.cudnn.te_first.fails",
                           "cudnn.mapped_copies.torch_first", "cudnn.mapped_copies.te_first"}) {
    ASSERT_TRUE(after.has(name)) << name;
    EXPECT_EQ(relinked.get_string(name), after.get_string(name)) << name;
  }
}

TEST(TeNodeRules, MissingPydanticIsAnErrorWithTheNodesPip) {
  NodeFixture node("h100-node", "h100-node-te");
  model::Facts facts = probe_te_node(node.host());
  auto findings = rules::evaluate_node(shipped(), facts);
  const model::Finding* missing = find(findings, "te-import-requirement-missing");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->severity, model::Severity::error);
  EXPECT_EQ(missing->area, "te");
  EXPECT_NE(missing->message.find("requires pydantic"), std::string::npos) << missing->message;
  ASSERT_FALSE(missing->fixes.empty());
  EXPECT_EQ(missing->fixes.front().command, "/opt/torch/.venv/bin/python3 -m pip install pydantic");
  EXPECT_EQ(find(findings, "te-requirement-missing"), nullptr);
  EXPECT_EQ(find(findings, "te-torch-extension-missing"), nullptr);

  // With pydantic installed the TE area has no error left.
  node.write("/opt/torch/.venv/lib/python3.12/site-packages/pydantic-2.12.4.dist-info/METADATA", "Name: pydantic\nVersion: 2.12.4\n");
  auto fixed = rules::evaluate_node(shipped(), probe_te_node(node.host()));
  EXPECT_EQ(find(fixed, "te-import-requirement-missing"), nullptr);
}

// Several missing requirements: one finding each, and a command with each its own word.
TEST(TeNodeRules, EachMissingRequirementIsItsOwnFinding) {
  NodeFixture node("h100-node", "h100-node-te");
  std::filesystem::remove_all(node.path("/opt/torch/.venv/lib/python3.12/site-packages/onnx-1.19.1.dist-info"));
  node.write("/opt/torch/.venv/lib/python3.12/site-packages/importlib_metadata-8.7.0.dist-info/METADATA",
             "Name: importlib-metadata\nVersion: 0.9\n");
  auto findings = rules::evaluate_node(shipped(), probe_te_node(node.host()));
  std::vector<std::string> commands;
  for (const auto& f : findings) {
    if (f.id == "te-requirement-missing" && !f.fixes.empty()) commands.push_back(f.fixes.front().command);
  }
  std::sort(commands.begin(), commands.end());
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0], "/opt/torch/.venv/bin/python3 -m pip install 'importlib-metadata>=1.0'");
  EXPECT_EQ(commands[1], "/opt/torch/.venv/bin/python3 -m pip install onnx");
}

// The classic: an older system cuDNN first on LD_LIBRARY_PATH comes before torch's RUNPATH, and
// torch's own cuDNN check fails (no TE needed).
TEST(TeNodeRules, OlderCudnnOnLdLibraryPathBreaksTorchItself) {
  NodeFixture node("h100-node");
  probe::Host host = node.host();
  model::Facts quiet = probe_te_node(host);
  EXPECT_EQ(quiet.get_bool("torch.cudnn.check_fails"), false);
  EXPECT_EQ(find(rules::evaluate_node(shipped(), quiet), "cudnn-torch-older-than-its-build"), nullptr);

  host.env["LD_LIBRARY_PATH"] = "/usr/lib/x86_64-linux-gnu:" + host.env["LD_LIBRARY_PATH"];
  model::Facts facts = probe_te_node(host);
  EXPECT_EQ(facts.get_string("torch.cudnn.path"), "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0");
  EXPECT_EQ(facts.get_bool("torch.cudnn.check_fails"), true);
  // The findings outlive the pointer into them (ASan: a temporary's element was read before).
  auto findings = rules::evaluate_node(shipped(), facts);
  const model::Finding* f = find(findings, "cudnn-torch-older-than-its-build");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("compiled against 9.19.0.56 but found runtime version 9.14.0"), std::string::npos) << f->message;
}

// tests/fixtures/snapshots/h100-node-te.json is the reference node with TE as the CLI cases see
// it: this fixture probed (python, libraries, environment) over h100-node.json's GPU, driver and
// system facts. It must stay what the probe reads; NVTE_REGENERATE_SNAPSHOT=1 rewrites it.
TEST(TeNodeRules, CommittedSnapshotIsWhatTheProbeReads) {
  NodeFixture node("h100-node", "h100-node-te");
  model::Facts probed = probe_te_node(node.host());
  auto base_text = util::read_file(std::string(NVTE_FIXTURES_DIR) + "/snapshots/h100-node.json", 1 << 20);
  ASSERT_TRUE(base_text.ok());
  auto base = model::Facts::from_json(*base_text, "h100-node.json");
  ASSERT_TRUE(base.ok());
  model::Facts merged;
  for (const auto& [name, value] : base->entries())
    if (name.starts_with("gpu") || name.starts_with("driver.") || name.starts_with("system.")) merged.set(name, value);
  for (const auto& [name, value] : probed.entries()) merged.set(name, value);
  merged.set("system.hostname", std::string("h100-node-te"));
  merged.derive();
  std::string text = merged.to_json(2) + "\n";
  const std::string path = std::string(NVTE_FIXTURES_DIR) + "/snapshots/h100-node-te.json";
  if (const char* regen = std::getenv("NVTE_REGENERATE_SNAPSHOT"); regen && std::string(regen) == "1") {
    ASSERT_TRUE(util::write_file_atomic(path, text, 0644).ok());
  }
  auto committed = util::read_file(path, 1 << 20);
  ASSERT_TRUE(committed.ok()) << path << ": run with NVTE_REGENERATE_SNAPSHOT=1 to write it";
  EXPECT_EQ(*committed, text) << "the probe of the fixture changed: NVTE_REGENERATE_SNAPSHOT=1 rewrites " << path;
}
