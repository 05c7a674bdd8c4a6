// The native probe's link model and its rules on fixture nodes whose ELF files the build makes
// (tests/fakes/fake_link.cpp): the ELF symbol reader on its own, then the four cases of issue 22
// — a TE extension built for another torch, a flash-attn wheel for torch 2.6, TE's core library
// needing a newer cuBLASLt, a cuDNN wheel without its sub-libraries — each with its finding and
// the right fix (verified by the fix search where the model can re-evaluate it), and the healthy
// trees with none.
#include "probe/elf_symbols.hpp"
#include "probe/link_map.hpp"
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"
#include "rules/fix_search.hpp"
#include "support/node_fixture.hpp"
#include "support/shipped_rules.hpp"
#include "support/probe_helpers.hpp"
#include "util/file_cache.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

using test_support::NodeFixture;

using test_support::find;
using test_support::k_h100_site;

namespace {

const std::string k_python = "/opt/torch/.venv/bin/python3";

model::Facts probe_files(const probe::Host& host) {
  model::Facts facts;
  probe::run_env_probe(host, facts);
  probe::run_python_probe(host, facts);
  probe::run_libraries_probe(host, facts);
  probe::run_native_probe(host, facts);
  facts.derive();
  return facts;
}

// The findings of the native rules (file rules/native.yaml) among all.
std::vector<std::string> native_findings(const std::vector<model::Finding>& findings) {
  std::vector<std::string> ids;
  for (const auto& f : findings) {
    for (const auto& tag : f.tags)
      if (tag == "native") ids.push_back(f.id + ": " + f.message);
  }
  return ids;
}

const model::Fix* fix_with(const std::vector<model::Fix>& fixes, const std::string& command) {
  auto it = std::find_if(fixes.begin(), fixes.end(), [&](const model::Fix& f) { return f.command == command; });
  return it == fixes.end() ? nullptr : &*it;
}

// The base name of the native.extensions entry for a file.
std::string entry(const model::Facts& facts, const std::string& file) {
  for (std::size_t i = 0, n = facts.count("native.extensions"); i < n; ++i) {
    std::string base = "native.extensions[" + std::to_string(i) + "]";
    if (facts.get_string(base + ".file") == file) return base;
  }
  ADD_FAILURE() << "no native.extensions entry for " << file;
  return "native.extensions[99]";
}

const std::string k_fa2 = "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so";

std::shared_ptr<const probe::ElfSymbols> symbols(const std::string& fake) {
  auto s = probe::read_elf_symbols(test_support::fake_lib(fake));
  if (!s) ADD_FAILURE() << s.error().message;
  return s ? *s : nullptr;
}

bool defines(const probe::ElfSymbols& s, std::string_view name, std::string_view version = {}) {
  return s.defines(name, probe::gnu_hash(name), version);
}

} // namespace

TEST(ElfSymbols, HashLookupsWithVersions) {
  auto c10_cuda = symbols("c10_cuda_new");
  ASSERT_TRUE(c10_cuda);
  EXPECT_TRUE(defines(*c10_cuda, "_ZN3c104cuda9SetDeviceEa"));             // SetDevice(signed char)
  EXPECT_FALSE(defines(*c10_cuda, "_ZN3c104cuda9SetDeviceEi"));            // SetDevice(int)
  EXPECT_FALSE(defines(*c10_cuda, "_ZN3c104warnERKNS_14SourceLocationE")); // referenced, not defined

  auto lt_old = symbols("lt13_no_grouped");
  auto lt_new = symbols("lt13_grouped");
  ASSERT_TRUE(lt_old && lt_new);
  EXPECT_TRUE(defines(*lt_old, "cublasLtCreate", "libcublasLt.so.13"));
  EXPECT_TRUE(defines(*lt_old, "cublasLtCreate"));
  EXPECT_FALSE(defines(*lt_old, "cublasLtCreate", "libcublasLt.so.12"));
  EXPECT_FALSE(defines(*lt_old, "cublasLtGroupedMatrixLayoutInit_internal", "libcublasLt.so.13"));
  EXPECT_TRUE(defines(*lt_new, "cublasLtGroupedMatrixLayoutInit_internal", "libcublasLt.so.13"));
  EXPECT_TRUE(lt_new->defines_version("libcublasLt.so.13"));

  auto core = symbols("te_core_grouped");
  ASSERT_TRUE(core);
  auto undefined = core->undefined();
  auto grouped = std::find_if(undefined.begin(), undefined.end(),
                              [](const probe::ElfUndefinedSymbol& u) { return u.name == "cublasLtGroupedMatrixLayoutInit_internal"; });
  ASSERT_NE(grouped, undefined.end());
  EXPECT_EQ(grouped->version, "libcublasLt.so.13");
  EXPECT_EQ(grouped->version_file, "libcublasLt.so.13");
  ASSERT_FALSE(core->version_needs().empty());
  EXPECT_EQ(core->version_needs().front().file, "libcublasLt.so.13");

  EXPECT_EQ(probe::demangle_symbol("_ZN3c104cuda9SetDeviceEi"), "c10::cuda::SetDevice(int)");
  EXPECT_EQ(probe::demangle_symbol("cublasLtCreate"), "cublasLtCreate");
  EXPECT_EQ(probe::demangle_symbol("_Znot_a_symbol"), "_Znot_a_symbol");
}

TEST(ElfSymbols, BadFilesAreParseErrorsNotCrashes) {
  NodeFixture node("h100-node");
  auto bytes = [&](const std::string& name, const std::string& content) {
    node.write("/bad/" + name, content);
    return probe::read_elf_symbols(node.path("/bad/" + name));
  };
  EXPECT_FALSE(bytes("text.so", "not an ELF file at all, just text that is long enough"));
  std::ifstream in(test_support::fake_lib("c10_cuda_new"), std::ios::binary);
  std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(whole.size(), 200u);
  // Cut anywhere: a parse error or a table that reads within the file, never a crash.
  for (std::size_t cut : {std::size_t{64}, std::size_t{100}, whole.size() / 2, whole.size() - 8}) {
    auto r = bytes("cut" + std::to_string(cut) + ".so", whole.substr(0, cut));
    if (r) (void)(*r)->defines("x", probe::gnu_hash("x"), "");
  }
  EXPECT_EQ(probe::read_elf_symbols(node.path("/bad/missing.so")).error().kind, util::ErrorKind::not_found);
}

// An extension loaded RTLD_LOCAL sees torch's libraries only through its own NEEDED entries, as
// glibc links it; the same library opened RTLD_GLOBAL first serves everyone.
TEST(LinkMap, LocalAndGlobalScopes) {
  NodeFixture node("h100-node");
  node.install("/lib/libc10.so", "c10_new");
  node.install("/lib/libc10_cuda.so", "c10_cuda_new");
  node.install("/ext/new.so", "ext_torch211");
  node.install("/ext/old.so", "ext_torch26");
  probe::LoaderView view;
  view.root = node.root();
  view.ld_library_path = {"/lib"};
  probe::LinkMap map(view);
  auto fine = map.open("/ext/new.so", false, true);
  ASSERT_TRUE(fine.opened) << fine.error;
  EXPECT_TRUE(fine.unresolved.empty());
  EXPECT_TRUE(fine.missing.empty());
  auto old = map.open("/ext/old.so", false, true);
  ASSERT_EQ(old.unresolved.size(), 1u);
  EXPECT_EQ(old.unresolved[0].mangled, "_ZN3c104cuda9SetDeviceEi");
  EXPECT_EQ(old.unresolved[0].demangled, "c10::cuda::SetDevice(int)");
  EXPECT_EQ(old.unresolved[0].needed_by, "old.so");

  probe::LinkMap bare(probe::LoaderView{node.root(), {}, nullptr, {}});
  auto lost = bare.open("/ext/new.so", false, true);
  ASSERT_EQ(lost.missing.size(), 2u);
  EXPECT_EQ(lost.missing[0].name, "libc10.so");
  EXPECT_EQ(lost.unresolved.size(), 2u);
}

// A library in the process serves only the scopes that hold it, whatever order the lookups ask in
// (link_map.hpp, "Cost"): an RTLD_LOCAL libc10_cuda loaded for one extension serves no other
// extension that does not need it, and serves all once opened global.
TEST(LinkMap, LocalLibrariesServeOnlyTheirOwnScope) {
  NodeFixture node("h100-node");
  node.install("/lib/libc10.so", "c10_new");
  node.install("/lib/libc10_cuda.so", "c10_cuda_new");
  node.install("/ext/new.so", "ext_torch211");
  node.install("/ext/c10_only.so", "ext_torch211_c10_only");
  node.install("/ext/c10_only_again.so", "ext_torch211_c10_only");
  probe::LinkMap map(probe::LoaderView{node.root(), {"/lib"}, nullptr, {}});
  auto fine = map.open("/ext/new.so", false, true);
  ASSERT_TRUE(fine.opened) << fine.error;
  EXPECT_TRUE(fine.unresolved.empty());
  auto lacking = map.open("/ext/c10_only.so", false, true);
  ASSERT_TRUE(lacking.opened) << lacking.error;
  ASSERT_EQ(lacking.unresolved.size(), 1u);
  EXPECT_EQ(lacking.unresolved[0].mangled, "_ZN3c104cuda9SetDeviceEa");
  EXPECT_NE(map.find("libc10_cuda.so"), nullptr); // in the process, not in this scope

  auto global = map.open("/lib/libc10_cuda.so", true, true);
  ASSERT_TRUE(global.opened) << global.error;
  auto served = map.open("/ext/c10_only_again.so", false, true);
  ASSERT_TRUE(served.opened) << served.error;
  EXPECT_TRUE(served.unresolved.empty());
}

// A library without the version node its users were linked against: "version `libcublasLt.so.13'
// not found (required by libtransformer_engine.so)", while the unversioned definitions still
// serve the versioned references (glibc accepts a definition from an object without versions).
TEST(LinkMap, MissingVersionNode) {
  NodeFixture node("h100-node");
  node.install("/lib/libcublasLt.so.13", "lt13_unversioned");
  node.install("/lib/libcudnn.so.9", "cudnn9_19");
  node.install("/lib/libcudart.so.13", "cudart13");
  node.install("/te/libtransformer_engine.so", "te_core_grouped");
  probe::LinkMap map(probe::LoaderView{node.root(), {"/lib"}, nullptr, {}});
  auto r = map.open("/te/libtransformer_engine.so", true, true);
  ASSERT_TRUE(r.opened) << r.error;
  EXPECT_TRUE(r.unresolved.empty());
  EXPECT_TRUE(r.missing.empty());
  ASSERT_EQ(r.missing_versions.size(), 1u);
  EXPECT_EQ(r.missing_versions[0], "libcublasLt.so.13 of libcublasLt.so.13 (required by libtransformer_engine.so)");
}

// A check whose answer is in the cache across runs maps no object for its symbols (issue 40):
// what its key needs of each object (identity, version needs) is in that cache too. The memo of
// the run (probe/node_path.hpp) holds every file read_elf_symbols read. A changed object is
// another identity: its summary and the check miss, and the check is made from the new file.
TEST(LinkMap, CachedCheckMapsNoObject) {
  NodeFixture node("h100-node");
  const std::vector<std::string> files{"/lib/libc10.so", "/lib/libc10_cuda.so", "/ext/new.so"};
  node.install(files[0], "c10_new");
  node.install(files[1], "c10_cuda_new");
  node.install(files[2], "ext_torch211");
  // The cache takes no file changed in its last seconds (FileCache::Limits::racy_seconds).
  auto age = [&](int hours) {
    for (const auto& f : files)
      std::filesystem::last_write_time(node.path(f), std::filesystem::file_time_type::clock::now() - std::chrono::hours(hours));
  };
  age(2);
  auto cache = std::make_shared<util::FileCache>(); // in memory: shared by the runs below
  std::vector<std::string> mapped;                  // the files the last run read the symbols of
  auto run = [&] {
    probe::NodeFsMemo memo;
    probe::node_set_file_cache(cache);
    probe::LinkMap map(probe::LoaderView{node.root(), {"/lib"}, nullptr, {}});
    auto r = map.open("/ext/new.so", false, true);
    mapped.clear();
    for (const auto& f : files)
      if (probe::node_memo_find("elf_symbols", node.path(f).string())) mapped.push_back(f);
    return r;
  };
  auto cold = run();
  ASSERT_TRUE(cold.opened) << cold.error;
  EXPECT_TRUE(cold.unresolved.empty());
  EXPECT_EQ(mapped, files);
  auto warm = run();
  ASSERT_TRUE(warm.opened) << warm.error;
  EXPECT_TRUE(warm.unresolved.empty());
  EXPECT_TRUE(warm.missing.empty());
  EXPECT_EQ(mapped, std::vector<std::string>{});

  node.install(files[1], "c10_cuda_old");
  age(1);
  auto changed = run();
  ASSERT_EQ(changed.unresolved.size(), 1u);
  EXPECT_EQ(changed.unresolved[0].mangled, "_ZN3c104cuda9SetDeviceEa");
  EXPECT_EQ(mapped, files); // the check was made again: every object of its scope read
  auto again = run();
  ASSERT_EQ(again.unresolved.size(), 1u);
  EXPECT_EQ(mapped, std::vector<std::string>{});
}

TEST(NativeProbe, HealthyTreesLinkAndGiveNoFinding) {
  NodeFixture node("h100-node", std::vector<std::string>{"h100-node-te"});
  model::Facts facts = probe_files(node.host());
  EXPECT_EQ(facts.get_string("probe.native.status"), "ok");
  ASSERT_GE(facts.get_int("native.extension_count").value_or(0), 3) << facts.get_string("probe.native.reason").value_or("");
  EXPECT_EQ(facts.get_int("native.broken_count"), 0);
  std::vector<std::string> files;
  for (std::size_t i = 0, n = facts.count("native.extensions"); i < n; ++i) {
    std::string base = "native.extensions[" + std::to_string(i) + "]";
    files.push_back(facts.get_string(base + ".package").value_or("") + ":" + facts.get_string(base + ".file").value_or(""));
    EXPECT_EQ(facts.get_bool(base + ".links"), true)
        << facts.get_string(base + ".path").value_or("") << " " << facts.get_string(base + ".unresolved").value_or("")
        << facts.get_string(base + ".missing_libraries").value_or("");
  }
  EXPECT_NE(std::find(files.begin(), files.end(), "te:libtransformer_engine.so"), files.end());
  EXPECT_NE(std::find(files.begin(), files.end(), "te:transformer_engine_torch.cpython-312-x86_64-linux-gnu.so"), files.end());
  EXPECT_NE(std::find(files.begin(), files.end(), "torch:libc10_cuda.so"), files.end());
  auto findings = rules::evaluate_node(test_support::shipped_rules(), facts);
  EXPECT_EQ(native_findings(findings), std::vector<std::string>{});

  // Incident #2's A100 node (TE 2.3, torch 2.3, a cuDNN 8 system copy and a cuDNN 9 wheel): whole.
  NodeFixture a100("a100-node");
  model::Facts a100_facts = probe_files(a100.host());
  EXPECT_EQ(a100_facts.get_string("probe.native.status"), "ok");
  EXPECT_GE(a100_facts.get_int("native.extension_count").value_or(0), 2);
  EXPECT_EQ(native_findings(rules::evaluate_node(test_support::shipped_rules(), a100_facts)), std::vector<std::string>{});

  // Without TE and flash-attn the probe does not run.
  NodeFixture plain("h100-node");
  model::Facts none = probe_files(plain.host());
  EXPECT_EQ(none.get_string("probe.native.status"), "skipped");
  EXPECT_EQ(native_findings(rules::evaluate_node(test_support::shipped_rules(), none)), std::vector<std::string>{});
}

// (a) TE's PyTorch extension built against an older torch.
TEST(NativeProbe, TeExtensionForAnotherTorchGetsTheRebuild) {
  NodeFixture node("h100-node", std::vector<std::string>{"h100-node-te", "te-ext-torch26"});
  model::Facts facts = probe_files(node.host());
  auto findings = rules::evaluate_node(test_support::shipped_rules(), facts);
  const model::Finding* f = find(findings, "te-extension-built-for-other-torch");
  ASSERT_NE(f, nullptr) << ::testing::PrintToString(native_findings(findings));
  EXPECT_EQ(f->severity, model::Severity::error);
  EXPECT_NE(f->message.find("`c10::cuda::SetDevice(int)`, which libc10_cuda.so lacks"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("undefined symbol: _ZN3c104cuda9SetDeviceEi"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("torch 2.11.0"), std::string::npos) << f->message;
  const std::string command = k_python + " -m pip install --no-build-isolation --force-reinstall 'transformer_engine[pytorch]==2.15.0'";
  auto fixes = rules::search_fixes(test_support::shipped_rules(), facts, nullptr, *f, {});
  const model::Fix* rebuild = fix_with(fixes, command);
  ASSERT_NE(rebuild, nullptr) << (fixes.empty() ? "" : fixes.front().command);
  ASSERT_TRUE(rebuild->verified.has_value()) << rebuild->unverified_reason;
  EXPECT_EQ(rebuild->verified->clears, "te-extension-built-for-other-torch");
  // Only that finding: TE's core library links.
  EXPECT_EQ(native_findings(findings).size(), 1u) << ::testing::PrintToString(native_findings(findings));
}

// (b) flash-attn's release wheel for torch 2.6 next to torch 2.11; rebuilt, it links.
TEST(NativeProbe, FlashAttnWheelForTorch26) {
  NodeFixture node("h100-node", std::vector<std::string>{"flash-attn-torch26"});
  model::Facts facts = probe_files(node.host());
  EXPECT_EQ(facts.get_string(entry(facts, k_fa2) + ".built_for_torch"), "2.6") << facts.get_string("probe.native.reason").value_or("");
  EXPECT_EQ(facts.get_int(entry(facts, k_fa2) + ".torch_symbol_count"), 1);
  auto findings = rules::evaluate_node(test_support::shipped_rules(), facts);
  const model::Finding* f = find(findings, "flash-attn-built-for-other-torch-release");
  ASSERT_NE(f, nullptr) << ::testing::PrintToString(native_findings(findings));
  EXPECT_NE(f->message.find("built for torch 2.6 (direct_url.json flash_attn-2.7.4.post1+cu12torch2.6cxx11abiTRUE"), std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("`c10::cuda::SetDevice(int)`"), std::string::npos) << f->message;
  auto fixes = rules::search_fixes(test_support::shipped_rules(), facts, nullptr, *f, {});
  const model::Fix* rebuild =
      fix_with(fixes, k_python + " -m pip install --no-build-isolation --force-reinstall --no-deps flash_attn==2.7.4.post1");
  ASSERT_NE(rebuild, nullptr) << (fixes.empty() ? "" : fixes.front().command);
  ASSERT_TRUE(rebuild->verified.has_value()) << rebuild->unverified_reason;
  const model::Fix* pin = fix_with(fixes, k_python + " -m pip install 'torch==2.6.*'");
  ASSERT_NE(pin, nullptr);
  EXPECT_FALSE(pin->verified.has_value()); // torch is not in the catalog: shown unverified
  EXPECT_FALSE(pin->unverified_reason.empty());

  node.install(k_h100_site + "/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so", "ext_torch211");
  model::Facts rebuilt = probe_files(node.host());
  EXPECT_EQ(rebuilt.get_bool(entry(rebuilt, k_fa2) + ".links"), true);
  EXPECT_EQ(native_findings(rules::evaluate_node(test_support::shipped_rules(), rebuilt)), std::vector<std::string>{});
}

// (c) TE's core library needs cublasLtGroupedMatrixLayoutInit_internal, which the nvidia-cublas
// 13.0 wheel torch loads lacks; with a newer wheel it links.
TEST(NativeProbe, TeCoreNeedsNewerCublasLt) {
  NodeFixture node("h100-node", std::vector<std::string>{"h100-node-te", "te-cublaslt-old"});
  model::Facts facts = probe_files(node.host());
  auto findings = rules::evaluate_node(test_support::shipped_rules(), facts);
  const model::Finding* f = find(findings, "native-extension-needs-newer-cublaslt");
  ASSERT_NE(f, nullptr) << ::testing::PrintToString(native_findings(findings));
  EXPECT_NE(f->message.find("libtransformer_engine.so"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("`cublasLtGroupedMatrixLayoutInit_internal`"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find(k_h100_site + "/nvidia/cu13/lib/libcublasLt.so.13"), std::string::npos) << f->message;
  ASSERT_FALSE(f->fixes.empty());
  EXPECT_EQ(f->fixes.front().command, k_python + " -m pip install --upgrade nvidia-cublas");
  EXPECT_EQ(native_findings(findings).size(), 1u) << ::testing::PrintToString(native_findings(findings));

  node.install(k_h100_site + "/nvidia/cu13/lib/libcublasLt.so.13", "lt13_grouped");
  EXPECT_EQ(native_findings(rules::evaluate_node(test_support::shipped_rules(), probe_files(node.host()))), std::vector<std::string>{});
}

// (d) the cuDNN wheel torch loads without its sub-libraries.
TEST(NativeProbe, CudnnWheelWithoutSubLibraries) {
  NodeFixture node("h100-node", std::vector<std::string>{"cudnn-wheel-incomplete"});
  model::Facts facts = probe_files(node.host());
  auto findings = rules::evaluate_node(test_support::shipped_rules(), facts);
  const model::Finding* f = find(findings, "cudnn-copy-missing-sublibraries");
  ASSERT_NE(f, nullptr) << ::testing::PrintToString(native_findings(findings));
  EXPECT_NE(f->message.find("nvidia-cudnn-cu13 wheel (" + k_h100_site + "/nvidia/cudnn/lib/libcudnn.so.9)"), std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("libcudnn_adv.so.9"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("libcudnn_engines_precompiled.so.9"), std::string::npos) << f->message;
  auto fixes = rules::search_fixes(test_support::shipped_rules(), facts, nullptr, *f, {});
  const model::Fix* reinstall = fix_with(fixes, k_python + " -m pip install --force-reinstall --no-deps nvidia-cudnn-cu13==9.19.0.56");
  ASSERT_NE(reinstall, nullptr) << (fixes.empty() ? "" : fixes.front().command);
  ASSERT_TRUE(reinstall->verified.has_value()) << reinstall->unverified_reason;
  EXPECT_EQ(native_findings(findings).size(), 1u) << ::testing::PrintToString(native_findings(findings));
}
