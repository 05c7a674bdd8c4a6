#include "model/fact_catalog.hpp"
#include "probe/interpreters.hpp"
#include "probe/node_probes.hpp"
#include "support/node_fixture.hpp"
#include "util/subprocess.hpp"
#include "support/probe_helpers.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

using namespace probe;
using test_support::NodeFixture;

using test_support::str;

namespace {} // namespace

TEST(PythonProbe, ReferenceNodeVenvWithTorch) {
  NodeFixture node("h100-node");
  model::Facts facts;
  run_python_probe(node.host(), facts);
  EXPECT_EQ(str(facts, "probe.python.status"), "ok");
  EXPECT_FALSE(facts.has("probe.python.reason")) << str(facts, "probe.python.reason");
  EXPECT_EQ(str(facts, "python.executable"), "/opt/torch/.venv/bin/python3");
  EXPECT_EQ(str(facts, "python.version"), "3.12.3");
  EXPECT_EQ(str(facts, "python.env_kind"), "venv");
  EXPECT_EQ(str(facts, "python.prefix"), "/opt/torch/.venv");
  EXPECT_EQ(str(facts, "python.site_packages"), "/opt/torch/.venv/lib/python3.12/site-packages");
  EXPECT_EQ(str(facts, "torch.version"), "2.11.0+cu130");
  EXPECT_EQ(str(facts, "torch.cuda_version"), "13.0");
  EXPECT_EQ(str(facts, "torch.path"), "/opt/torch/.venv/lib/python3.12/site-packages/torch");
  EXPECT_EQ(str(facts, "torch.cudnn.compiled_version"), "9.19.0.56"); // the wheel torch's METADATA pins
  EXPECT_EQ(str(facts, "package.nvidia_cudnn_cu13.version"), "9.19.0.56");
  EXPECT_EQ(str(facts, "package.nvidia_cuda_nvrtc.version"), "13.0.88");
  EXPECT_FALSE(facts.has("package.numpy.version"));
  EXPECT_FALSE(facts.has("te.version"));
  EXPECT_FALSE(facts.has("flash_attn.version"));
  // The venv and the system interpreter; python3 and python3.12 of /usr/bin are one.
  EXPECT_EQ(facts.count("python.interpreters"), 2u);
  EXPECT_EQ(str(facts, "python.interpreters[1].path"), "/usr/bin/python3");
  EXPECT_EQ(str(facts, "python.interpreters[1].version"), "3.12"); // from the symlink python3 -> python3.12
}

TEST(PythonProbe, TeNodeChoosesTheInterpreterWithTe) {
  NodeFixture node("a100-node");
  model::Facts facts;
  run_python_probe(node.host(), facts);
  EXPECT_EQ(str(facts, "python.executable"), "/opt/venv/bin/python3");
  EXPECT_EQ(str(facts, "python.version"), "3.10.12");
  EXPECT_EQ(str(facts, "te.version"), "2.3.0");
  EXPECT_EQ(str(facts, "te.distribution"), "transformer_engine");
  EXPECT_FALSE(facts.has("te.cuda_major"));
  EXPECT_EQ(str(facts, "te.path"), "/opt/venv/lib/python3.10/site-packages/transformer_engine");
  EXPECT_EQ(str(facts, "torch.version"), "2.3.0+cu121");
  EXPECT_EQ(str(facts, "torch.cuda_version"), "12.1");
  EXPECT_EQ(str(facts, "flash_attn.version"), "2.5.8");
  EXPECT_EQ(str(facts, "megatron_core.version"), "0.7.0");
  EXPECT_EQ(str(facts, "package.nvidia_cudnn_cu12.version"), "9.1.0.70");
}

TEST(PythonProbe, PypiTeDistributionsAndTheirCudaMajor) {
  NodeFixture node("a100-node");
  std::string site = "/opt/venv/lib/python3.10/site-packages";
  std::filesystem::remove_all(node.path(site + "/transformer_engine-2.3.0.dist-info"));
  std::filesystem::remove_all(node.path(site + "/torch/version.py"));
  node.write(site + "/transformer_engine_cu12-2.5.0.dist-info/METADATA", "Name: transformer-engine-cu12\nVersion: 2.5.0\n");
  node.write(site + "/transformer_engine_torch-2.5.0.dist-info/METADATA", "Name: transformer_engine_torch\nVersion: 2.5.0\n");
  model::Facts facts;
  run_python_probe(node.host(), facts);
  EXPECT_EQ(str(facts, "te.version"), "2.5.0");
  EXPECT_EQ(str(facts, "te.distribution"), "transformer-engine-cu12");
  EXPECT_EQ(facts.get_int("te.cuda_major"), 12);
  EXPECT_EQ(str(facts, "package.transformer_engine_torch.version"), "2.5.0");
  // Without torch/version.py the CUDA version comes from the +cu121 suffix.
  EXPECT_EQ(str(facts, "torch.cuda_version"), "12.1");
}

TEST(PythonProbe, PythonOptionWinsAndAMissingOneIsReported) {
  NodeFixture node("a100-node");
  Host host = node.host();
  host.python = "/usr/bin/python3.10";
  model::Facts facts;
  run_python_probe(host, facts);
  EXPECT_EQ(str(facts, "python.executable"), "/usr/bin/python3.10");
  EXPECT_EQ(str(facts, "python.env_kind"), "system");
  EXPECT_FALSE(facts.has("torch.version"));
  host.python = "/opt/none/python3";
  model::Facts other;
  run_python_probe(host, other);
  EXPECT_NE(str(other, "probe.python.reason").find("--python /opt/none/python3: not found"), std::string::npos);
  EXPECT_EQ(str(other, "python.executable"), "/opt/venv/bin/python3");
}

TEST(PythonProbe, SystemPythonEggInfo) {
  NodeFixture node("no-driver-node");
  model::Facts facts;
  run_python_probe(node.host(), facts);
  EXPECT_EQ(str(facts, "probe.python.status"), "ok");
  EXPECT_EQ(str(facts, "python.executable"), "/usr/bin/python3");
  EXPECT_EQ(str(facts, "python.version"), "3.11");
  EXPECT_EQ(str(facts, "python.env_kind"), "system");
  EXPECT_EQ(str(facts, "python.interpreters[0].site_packages"), "/usr/lib/python3/dist-packages");
  EXPECT_FALSE(facts.has("torch.version"));
}

TEST(PythonProbe, NoInterpreterIsNotInstalled) {
  NodeFixture node("no-driver-node");
  Host host = node.host();
  host.env["PATH"] = "/nonexistent";
  model::Facts facts;
  run_python_probe(host, facts);
  EXPECT_EQ(str(facts, "probe.python.status"), "not_installed");
  EXPECT_FALSE(facts.has("python.executable"));
}

TEST(PythonProbe, BrokenDistInfoIsRecordedAndSkipped) {
  NodeFixture node("broken-node");
  std::string site = "/opt/venv/lib/python3.11/site-packages";
  ::chmod(node.path(site + "/nvidia_cudnn_cu12-9.0.0.312.dist-info").c_str(), 0);
  model::Facts facts;
  run_python_probe(node.host(), facts);
  EXPECT_EQ(str(facts, "probe.python.status"), "ok");
  EXPECT_EQ(str(facts, "torch.version"), "2.4.0");
  EXPECT_FALSE(facts.has("torch.cuda_version")); // cuda = None: a CPU build
  std::string reason = str(facts, "probe.python.reason");
  EXPECT_NE(reason.find("flash_attn-2.6.3.dist-info/METADATA"), std::string::npos) << reason;
  // Distributions the doctor does not look at are not read, broken or not (dist_info_test).
  EXPECT_EQ(reason.find("broken_pkg-1.0.dist-info"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("dangling-1.0.dist-info"), std::string::npos) << reason;
  EXPECT_FALSE(facts.has("flash_attn.version"));
  if (::geteuid() != 0) {
    EXPECT_NE(reason.find("nvidia_cudnn_cu12-9.0.0.312.dist-info"), std::string::npos) << reason;
    EXPECT_FALSE(facts.has("package.nvidia_cudnn_cu12.version"));
  }
}

// pyenv's shims are shell scripts; the interpreter that runs is the selected version's.
TEST(PythonProbe, PyenvShimsResolveToTheSelectedVersion) {
  NodeFixture node("no-driver-node");
  node.write("/root/.pyenv/shims/python3", "#!/usr/bin/env bash\nexec pyenv exec \"$program\" \"$@\"\n");
  node.write("/root/.pyenv/shims/python3.9", "#!/usr/bin/env bash\n");
  node.write("/root/.pyenv/version", "3.11.7\n");
  node.write("/root/.pyenv/versions/3.11.7/bin/python3.11", "# interpreter");
  node.symlink("/root/.pyenv/versions/3.11.7/bin/python3", "python3.11");
  node.write("/root/.pyenv/versions/3.9.18/bin/python3.9", "# interpreter");
  std::string site = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages";
  node.write(site + "/torch-2.5.1.dist-info/METADATA", "Name: torch\nVersion: 2.5.1+cu124\n");
  node.write(site + "/torch/__init__.py", "");
  Host host = node.host();
  host.env["PATH"] = "/root/.pyenv/shims:/usr/bin";
  model::Facts facts;
  run_python_probe(host, facts);
  EXPECT_EQ(str(facts, "python.executable"), "/root/.pyenv/versions/3.11.7/bin/python3");
  EXPECT_EQ(str(facts, "python.version"), "3.11.7");
  EXPECT_EQ(str(facts, "python.site_packages"), site);
  EXPECT_EQ(str(facts, "torch.cuda_version"), "12.4");
  // python3.9 is not provided by the selected 3.11.7: that shim would fail, so it is no interpreter.
  EXPECT_EQ(facts.count("python.interpreters"), 2u);
  host.env["PYENV_VERSION"] = "3.9.18";
  model::Facts other;
  run_python_probe(host, other);
  EXPECT_EQ(str(other, "python.interpreters[0].path"), "/root/.pyenv/versions/3.9.18/bin/python3.9");
}

// Every fact the two probes write is a catalog name of the right type (so --facts replays it).
TEST(PythonProbe, EveryFactIsInTheCatalog) {
  for (const char* fixture : {"h100-node", "a100-node", "no-driver-node", "broken-node", "h100-node-te"}) {
    // h100-node-te is an overlay on h100-node (the reference node with TE on PYTHONPATH).
    bool overlay = std::string_view(fixture) == "h100-node-te";
    NodeFixture node(overlay ? "h100-node" : fixture, overlay ? fixture : "");
    model::Facts facts;
    run_python_probe(node.host(), facts);
    run_libraries_probe(node.host(), facts);
    for (const auto& [name, value] : facts.entries()) {
      const model::FactSpec* spec = model::find_fact_spec(name);
      ASSERT_NE(spec, nullptr) << fixture << ": " << name;
      EXPECT_EQ(spec->type, value.type()) << fixture << ": " << name;
    }
  }
}

TEST(PythonProbe, CondaEnvironment) {
  NodeFixture node("no-driver-node");
  node.write("/opt/conda/envs/te/bin/python3.11", "# interpreter");
  node.symlink("/opt/conda/envs/te/bin/python3", "python3.11");
  node.write("/opt/conda/envs/te/conda-meta/python-3.11.5-h955ad1f_0.json", "{}");
  node.write("/opt/conda/envs/te/lib/python3.11/site-packages/transformer_engine-1.13.0.dist-info/METADATA",
             "Name: transformer_engine\nVersion: 1.13.0\n");
  Host host = node.host();
  host.env["CONDA_PREFIX"] = "/opt/conda/envs/te";
  model::Facts facts;
  run_python_probe(host, facts);
  EXPECT_EQ(str(facts, "python.executable"), "/opt/conda/envs/te/bin/python3");
  EXPECT_EQ(str(facts, "python.env_kind"), "conda");
  EXPECT_EQ(str(facts, "python.version"), "3.11.5");
  EXPECT_EQ(str(facts, "te.version"), "1.13.0");
  EXPECT_FALSE(facts.has("te.path")); // no transformer_engine/ package directory
}

// Audit 2026-11-25 item 21: an unreadable site-packages read as "PyTorch not installed". The
// denied directory is now a fact (and `check` turns it into a finding). Needs another uid: root
// reads through any mode.
TEST(PythonProbe, UnreadableSitePackagesAreNamedNotTakenForEmpty) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the probe as another user";
  NodeFixture node("h100-node");
  const std::string site = "/opt/torch/.venv/lib/python3.12/site-packages";
  for (auto p = node.root(); !p.empty() && p != p.root_path(); p = p.parent_path()) ::chmod(p.c_str(), 0755);
  ASSERT_EQ(::chmod(node.path(site).c_str(), 0), 0);
  auto outcome = util::run_function([&](int result_fd) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) return 2;
    std::vector<std::string> only = {"python"};
    model::Facts facts = probe::probe_node(node.host(), only);
    util::write_all(result_fd, facts.get_string("probe.unreadable_paths").value_or("<absent>") + "\n" +
                                   facts.get_string("torch.version").value_or("<no torch>"));
    return 0;
  }, std::chrono::seconds(30));
  ::chmod(node.path(site).c_str(), 0755);
  ASSERT_TRUE(outcome.ok());
  ASSERT_EQ(outcome->exit_code.value_or(-1), 0) << outcome->describe();
  EXPECT_NE(outcome->out.find(site), std::string::npos) << outcome->out;
  EXPECT_NE(outcome->out.find("<no torch>"), std::string::npos) << outcome->out;
}

// TE in a `pip install --target` prefix on PYTHONPATH (the reference node, issue 25): found
// there, its Requires-Dist checked against the venv, its files found the way TE finds them.
TEST(PythonProbe, TeOnThePythonPathAndItsRequirements) {
  NodeFixture node("h100-node", "h100-node-te");
  const std::string site = "/opt/torch/.venv/lib/python3.12/site-packages";
  // An installed version below the specifier is unmet; a marker other than extra is not judged.
  node.write(site + "/importlib_metadata-8.7.0.dist-info/METADATA", "Name: importlib-metadata\nVersion: 0.9\n");
  std::string metadata = "Name: transformer_engine\nVersion: 2.15.0\nRequires-Dist: pydantic\n"
                         "Requires-Dist: importlib-metadata>=1.0\nRequires-Dist: torch>=2.1\n"
                         "Requires-Dist: dataclasses; python_version < \"3.7\"\nRequires-Dist: pytest; extra == \"test\"\n";
  node.write("/opt/te/transformer_engine-2.15.0.dist-info/METADATA", metadata);
  model::Facts facts;
  run_python_probe(node.host(), facts);
  EXPECT_EQ(str(facts, "te.path"), "/opt/te/transformer_engine");
  EXPECT_EQ(str(facts, "python.site_packages"), site);
  EXPECT_EQ(facts.get_int("te.requirements.missing_count"), 2);
  EXPECT_EQ(str(facts, "te.requirements.missing[0].requirement"), "pydantic");
  EXPECT_FALSE(facts.has("te.requirements.missing[0].found_version"));
  EXPECT_EQ(str(facts, "te.requirements.missing[1].requirement"), "importlib-metadata>=1.0");
  EXPECT_EQ(str(facts, "te.requirements.missing[1].name"), "importlib_metadata");
  EXPECT_EQ(str(facts, "te.requirements.missing[1].found_version"), "0.9");
}

TEST(PythonProbe, TePytorchExtensionMissingOrTwice) {
  {
    NodeFixture node("h100-node", "h100-node-te");
    std::filesystem::remove(node.path("/opt/te/transformer_engine_torch.cpython-312-x86_64-linux-gnu.so"));
    model::Facts facts;
    run_python_probe(node.host(), facts);
    EXPECT_EQ(facts.get_bool("te.torch_extension.present"), false);
    EXPECT_FALSE(facts.has("te.torch_extension.path"));
    EXPECT_NE(str(facts, "te.torch_extension.reason").find("Could not find shared object file"), std::string::npos);
    EXPECT_EQ(str(facts, "te.core_library.path"), "/opt/te/transformer_engine/libtransformer_engine.so");
  }
  {
    NodeFixture node("h100-node", "h100-node-te");
    node.write("/opt/te/transformer_engine/transformer_engine_torch.cpython-311-x86_64-linux-gnu.so", "a second build");
    model::Facts facts;
    run_python_probe(node.host(), facts);
    EXPECT_EQ(facts.get_bool("te.torch_extension.present"), false);
    EXPECT_NE(str(facts, "te.torch_extension.reason").find("Multiple files found"), std::string::npos);
  }
  {
    // Without PyTorch and without transformer_engine_torch there is no extension to look for.
    NodeFixture node("h100-node", "h100-node-te");
    std::filesystem::remove_all(node.path("/opt/torch/.venv/lib/python3.12/site-packages/torch-2.11.0+cu130.dist-info"));
    model::Facts facts;
    run_python_probe(node.host(), facts);
    EXPECT_EQ(str(facts, "te.version"), "2.15.0");
    EXPECT_FALSE(facts.has("te.torch_extension.present"));
  }
}

TEST(PythonProbe, CudnnFrontendFromItsDistInfo) {
  // TE 2.18 and later require the nvidia-cudnn-frontend wheel: its version, read from METADATA.
  NodeFixture node("a100-node");
  std::string site = "/opt/venv/lib/python3.10/site-packages";
  model::Facts before;
  run_python_probe(node.host(), before);
  EXPECT_FALSE(before.has("cudnn_frontend.version"));
  node.write(site + "/nvidia_cudnn_frontend-1.25.0.dist-info/METADATA",
             "Metadata-Version: 2.1\nName: nvidia-cudnn-frontend\nVersion: 1.25.0\n");
  model::Facts facts;
  run_python_probe(node.host(), facts);
  EXPECT_EQ(str(facts, "cudnn_frontend.version"), "1.25.0");
  EXPECT_EQ(str(facts, "package.nvidia_cudnn_frontend.version"), "1.25.0");
  ASSERT_NE(model::find_fact_spec("cudnn_frontend.version"), nullptr);
  EXPECT_EQ(model::find_fact_spec("cudnn_frontend.version")->type, model::ValueType::version);
}

TEST(SystemProbe, GlibcOfTheRootsLibcIsReadWithoutRunningIt) {
  // Under another root (a mounted image, a fixture) the doctor's own libc says nothing: the
  // root's libc.so.6 does, by the version in its file name (before glibc 2.34) or its banner.
  NodeFixture node("h100-node");
  model::Facts none;
  run_system_probe(node.host(), none);
  EXPECT_FALSE(none.has("system.glibc_version"));
  node.write("/lib64/libc.so.6", std::string("\x7f"
                                             "ELF\2\1\1",
                                             7) +
                                     std::string(64, '\0') + "GNU C Library (Ubuntu GLIBC 2.39-0ubuntu8.4) stable release version 2.39.\n");
  model::Facts banner;
  run_system_probe(node.host(), banner);
  EXPECT_EQ(str(banner, "system.glibc_version"), "2.39");
  std::filesystem::remove(node.path("/lib64/libc.so.6"));
  node.write("/lib64/libc-2.31.so", "not an ELF file at all");
  node.symlink("/lib64/libc.so.6", "libc-2.31.so");
  model::Facts named;
  run_system_probe(node.host(), named);
  EXPECT_EQ(str(named, "system.glibc_version"), "2.31");
}

// The native probe starts from the python probe's packages (Host::ready), not after its
// bytecode and requirements walks: the call comes once, with what the native probe reads set
// and what is recorded after it not yet.
TEST(PythonProbe, SaysWhenWhatTheNativeProbeReadsIsKnown) {
  NodeFixture node("h100-node", std::vector<std::string>{"h100-node-te"});
  probe::Host host = node.host();
  std::vector<std::string> calls;
  model::Facts at_ready;
  host.ready = [&](std::string_view probe, const model::Facts& facts) {
    calls.emplace_back(probe);
    at_ready = facts;
  };
  model::Facts facts;
  run_python_probe(host, facts);
  ASSERT_EQ(calls, std::vector<std::string>{"python"});
  for (const char* read : {"python.executable", "torch.path", "te.version"}) EXPECT_TRUE(at_ready.has(read)) << read;
  EXPECT_EQ(at_ready.count("python.bytecode"), 0u);
  EXPECT_GT(facts.count("python.bytecode"), 0u);
  EXPECT_FALSE(at_ready.has("probe.python.status"));
  EXPECT_EQ(str(facts, "probe.python.status"), "ok");
  // The venv's interpreter, first on PATH, has TE: the choice is made before the system
  // interpreter's site directories are scanned, and the native probe starts then.
  EXPECT_EQ(str(facts, "python.executable"), str(facts, "python.interpreters[0].path"));
  ASSERT_TRUE(facts.has("python.interpreters[1].path"));
  EXPECT_FALSE(at_ready.has("python.interpreters[1].path"));
}
