// The Requires-Dist closure (probe/requirements.hpp): extras in effect, markers, specifiers, and
// on fixture trees the facts for TE, torch and flash-attn.
#include "probe/node_probes.hpp"
#include "probe/requirements.hpp"
#include "support/node_fixture.hpp"
#include "support/probe_helpers.hpp"

#include <gtest/gtest.h>

using namespace probe;
using test_support::NodeFixture;

using test_support::str;

namespace {

Distribution dist(const std::string& name, std::vector<std::string> requires_dist) {
  Distribution d;
  d.name = name;
  d.normalized = normalize_distribution_name(name);
  d.version = "1.0";
  d.metadata_path = "/site/" + name + ".dist-info";
  d.requires_dist = std::move(requires_dist);
  return d;
}

std::vector<std::string> unmet_texts(const RequirementCheck& check) {
  std::vector<std::string> out;
  for (const auto& u : check.unmet) out.push_back(u.requirement.text() + (u.extra.empty() ? "" : " [" + u.extra + "]"));
  return out;
}

const auto k_env = pep508::linux_cpython_environment("3.12.3", "x86_64", "6.8.0");

} // namespace

// TE's metapackage as PyPI publishes it: the cores and framework packages behind extras.
TEST(Requirements, TeMetapackageExtrasInEffect) {
  Distribution te =
      dist("transformer_engine",
           {"transformer_engine_cu12==2.15.0; extra == \"core\"", "transformer_engine_cu12==2.15.0; extra == \"core_cu12\"",
            "transformer_engine_cu13==2.15.0; extra == \"core_cu13\"", "transformer_engine_torch==2.15.0; extra == \"pytorch\"",
            "transformer_engine_jax==2.15.0; extra == \"jax\"", "pytest>=8; extra == \"test\""});
  std::map<std::string, std::string> installed = {{"torch", "2.9.0"}, {"transformer_engine_cu13", "2.15.0"}};
  // torch there: [pytorch] is in effect and its package is missing; the cu13 core meets the cores.
  auto check = check_requirements({&te}, installed, k_env, ExtraContext{true, false, 13});
  EXPECT_EQ(unmet_texts(check), (std::vector<std::string>{"transformer_engine_torch==2.15.0 [pytorch]"}));
  // No core at all: the one for the node's CUDA major is named.
  installed.erase("transformer_engine_cu13");
  installed["transformer_engine_torch"] = "2.15.0";
  check = check_requirements({&te}, installed, k_env, ExtraContext{true, false, 13});
  EXPECT_EQ(unmet_texts(check), (std::vector<std::string>{"transformer_engine_cu13==2.15.0 [core_cu13]"}));
  check = check_requirements({&te}, installed, k_env, ExtraContext{true, false, std::nullopt});
  EXPECT_EQ(unmet_texts(check), (std::vector<std::string>{"transformer_engine_cu12==2.15.0 [core]"}));
  // A core of another release is no core for this one.
  installed["transformer_engine_cu12"] = "2.14.0";
  check = check_requirements({&te}, installed, k_env, ExtraContext{true, false, 12});
  ASSERT_EQ(check.unmet.size(), 1u);
  EXPECT_EQ(check.unmet[0].requirement.text(), "transformer_engine_cu12==2.15.0");
  EXPECT_EQ(check.unmet[0].found_version, "2.14.0");
  // Without torch and jax, neither framework extra is in effect; [test] never is.
  installed["transformer_engine_cu12"] = "2.15.0";
  check = check_requirements({&te}, installed, k_env, ExtraContext{false, false, 12});
  EXPECT_TRUE(check.unmet.empty()) << unmet_texts(check).front();
  check = check_requirements({&te}, installed, k_env, ExtraContext{false, true, 12});
  EXPECT_EQ(unmet_texts(check), (std::vector<std::string>{"transformer_engine_jax==2.15.0 [jax]"}));
}

// torch's own pins: markers on the platform, PEP 503 names, versions with local labels.
TEST(Requirements, TorchPinsMarkersAndNames) {
  Distribution torch = dist("torch", {"filelock", "typing-extensions>=4.10.0", "setuptools; python_version >= \"3.12\"", "sympy>=1.13.3",
                                      "nvidia-cublas-cu12==12.8.4.1; platform_system == \"Linux\" and platform_machine == \"x86_64\"",
                                      "nvidia-cudnn-cu12==9.10.2.21; platform_system == \"Linux\" and platform_machine == \"aarch64\"",
                                      "triton==3.4.0; platform_system == \"Windows\"", "dataclasses; python_version < \"3.7\"",
                                      "opt-einsum>=3.3; extra == \"opt-einsum\"", "bad marker; python_version >>> '3'", "!!!"});
  std::map<std::string, std::string> installed = {
      {"filelock", "3.20.0"}, {"typing_extensions", "4.15.0"}, {"sympy", "1.13.1"}, {"nvidia_cublas_cu12", "12.8.4.1"}};
  auto check = check_requirements({&torch}, installed, k_env, ExtraContext{true, false, 12});
  EXPECT_EQ(unmet_texts(check), (std::vector<std::string>{"setuptools", "sympy>=1.13.3"}));
  EXPECT_EQ(check.unmet[1].found_version, "1.13.1");
  ASSERT_EQ(check.problems.size(), 2u);
  EXPECT_NE(check.problems[0].find("python_version >>> '3'"), std::string::npos) << check.problems[0];
  EXPECT_NE(check.problems[1].find("'!!!'"), std::string::npos) << check.problems[1];
  // On Python 3.11 setuptools is not required; an unknown machine leaves the arch pins unjudged.
  auto py311 = pep508::linux_cpython_environment("3.11.9", "", "");
  installed.erase("nvidia_cublas_cu12");
  check = check_requirements({&torch}, installed, py311, ExtraContext{true, false, 12});
  EXPECT_EQ(unmet_texts(check), (std::vector<std::string>{"sympy>=1.13.3"}));
  // The wheel pin is checked where the marker holds: 12.9 under a ==12.8.4.1 pin is unmet.
  installed["nvidia_cublas_cu12"] = "12.9.1.4";
  check = check_requirements({&torch}, installed, k_env, ExtraContext{true, false, 12});
  EXPECT_EQ(unmet_texts(check), (std::vector<std::string>{"setuptools", "sympy>=1.13.3", "nvidia-cublas-cu12==12.8.4.1"}));
}

// On the reference node's tree: TE 2.15 from source without pydantic, torch's METADATA pins, a
// flash-attn whose einops is missing — each package's facts; the healthy tree has none.
TEST(Requirements, FactsOnAFixtureTree) {
  NodeFixture node("h100-node", "h100-node-te");
  const std::string site = "/opt/torch/.venv/lib/python3.12/site-packages";
  node.write(site + "/flash_attn-2.8.3.dist-info/METADATA",
             "Name: flash_attn\nVersion: 2.8.3\nRequires-Dist: torch\nRequires-Dist: einops\n");
  model::Facts facts;
  facts.set("system.arch", "x86_64");
  run_python_probe(node.host(), facts);
  EXPECT_EQ(facts.get_int("te.requirements.missing_count"), 1);
  EXPECT_EQ(str(facts, "te.requirements.missing[0].requirement"), "pydantic");
  EXPECT_EQ(facts.get_int("torch.requirements.missing_count"), 0);
  EXPECT_EQ(facts.get_int("flash_attn.requirements.missing_count"), 0); // einops is there for TE

  std::filesystem::remove_all(node.path(site + "/einops-0.8.1.dist-info"));
  node.write(site + "/pydantic-2.12.4.dist-info/METADATA", "Name: pydantic\nVersion: 2.12.4\n");
  std::filesystem::remove_all(node.path(site + "/filelock-3.20.0.dist-info"));
  model::Facts broken;
  run_python_probe(node.host(), broken);
  EXPECT_EQ(broken.get_int("flash_attn.requirements.missing_count"), 1);
  EXPECT_EQ(str(broken, "flash_attn.requirements.missing[0].requirement"), "einops");
  EXPECT_EQ(str(broken, "flash_attn.requirements.missing[0].required_by"), "flash_attn");
  EXPECT_EQ(broken.get_int("torch.requirements.missing_count"), 1);
  EXPECT_EQ(str(broken, "torch.requirements.missing[0].requirement"), "filelock");
  EXPECT_EQ(broken.get_int("te.requirements.missing_count"), 1);
  EXPECT_EQ(str(broken, "te.requirements.missing[0].name"), "einops");
  EXPECT_FALSE(broken.has("flash_attn_3.requirements.missing_count"));
}
