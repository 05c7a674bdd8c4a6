// The self-test's kernel cache (selftest/kernel_cache.hpp) without a GPU: every input of a key
// changes it; the files are private, checked and replaced atomically, and anything wrong with one
// (corrupt, truncated, oversized, another key, another owner, a mode others may write, a
// symlink) is a miss that compiles again and rewrites it; the fallback logic with fake
// cuDNN / NVRTC steps (a refused copy compiles, a build failure is the build's error, a cache that
// cannot write fails nothing); the reference kernels' CUBIN with the toolkit's real NVRTC.
#include "gpuapi/cudnn.hpp"
#include "selftest/checks.hpp"
#include "selftest/kernel_cache.hpp"
#include "selftest/reference.hpp"
#include "selftest/sdpa_graph.hpp"
#include "selftest/selftest.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using selftest::CacheKey;
using selftest::Json;
using selftest::KeptArtifact;
using selftest::KernelCache;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "nvte-kernel-cache-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace, ec);
    fs::remove_all(path, ec);
  }
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text, fs::perms mode = fs::perms::owner_read | fs::perms::owner_write) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  fs::permissions(p, mode, fs::perm_options::replace);
}

CacheKey key_of(const std::string& value) {
  CacheKey key;
  key.add("input", value);
  return key;
}

// Fake steps of one compilation: counts what ran; restore refuses when told to.
struct FakeCompiler {
  std::string built = "compiled-payload";
  std::string restored;
  int builds = 0, restores = 0;
  bool refuse = false, build_fails = false, serialize_fails = false;
  selftest::CacheSteps steps() {
    selftest::CacheSteps s;
    s.restore = [this](std::string_view payload) -> util::Result<void> {
      ++restores;
      if (refuse) return util::Error{util::ErrorKind::driver_error, "CUDNN_STATUS_BAD_PARAM (2000): fake refusal"};
      restored = std::string(payload);
      return {};
    };
    s.build = [this]() -> util::Result<void> {
      ++builds;
      if (build_fails) return util::Error{util::ErrorKind::driver_error, "No valid execution plans built (fake)"};
      return {};
    };
    s.serialize = [this]() -> util::Result<std::string> {
      if (serialize_fails) return util::Error{util::ErrorKind::driver_error, "no JSON representation (fake)"};
      return built;
    };
    return s;
  }
};

selftest::PlanKeyInputs plan_inputs() {
  selftest::PlanKeyInputs in;
  in.shape = "bf16 bshd_bshd_bshd b2 h16/16 s512 d128 causal";
  in.cudnn_files = "/usr/lib/libcudnn.so.9 dev=1 ino=2 size=3 mtime=4";
  in.cudnn_version = 91900;
  in.cudart_version = 13000;
  in.nvrtc = "/usr/lib/libnvrtc.so.13 dev=1 ino=5 size=6 mtime=7 version 13.0";
  in.driver_version = 13000;
  in.driver_files = "/usr/lib/libcuda.so.1 dev=1 ino=8 size=9 mtime=10";
  in.gpu_name = "NVIDIA H200";
  in.sm = 90;
  in.gpu_uuid = "00112233445566778899aabbccddeeff";
  return in;
}

} // namespace

TEST(KernelCacheKey, EveryPlanInputChangesTheKey) {
  const auto base = plan_inputs();
  const CacheKey reference = selftest::plan_config_key(selftest::plan_key(base), "c0 type 17\n", "engine 6 runtime-compiled knobs 3=1");
  std::vector<std::pair<std::string, CacheKey>> changed;
  auto with = [&](const char* what, auto change) {
    auto in = base;
    change(in);
    changed.emplace_back(what, selftest::plan_config_key(selftest::plan_key(in), "c0 type 17\n", "engine 6 runtime-compiled knobs 3=1"));
  };
  with("shape", [](auto& in) { in.shape = "bf16 bshd_bshd_bshd b2 h16/16 s1024 d128 causal"; });
  with("cuDNN's files", [](auto& in) { in.cudnn_files = "/usr/lib/libcudnn.so.9 dev=1 ino=2 size=3 mtime=5"; });
  with("cuDNN's version", [](auto& in) { in.cudnn_version = 91901; });
  with("cuDNN's CUDA runtime", [](auto& in) { in.cudart_version = 12090; });
  with("NVRTC", [](auto& in) { in.nvrtc = "/usr/lib/libnvrtc.so.13 dev=1 ino=5 size=6 mtime=7 version 13.1"; });
  with("the driver's version", [](auto& in) { in.driver_version = 13010; });
  with("libcuda", [](auto& in) { in.driver_files = "/usr/lib/libcuda.so.1 dev=1 ino=8 size=9 mtime=11"; });
  with("the GPU's name", [](auto& in) { in.gpu_name = "NVIDIA H100 80GB HBM3"; });
  with("the compute capability", [](auto& in) { in.sm = 100; });
  with("the GPU's UUID", [](auto& in) { in.gpu_uuid = "ffeeddccbbaa99887766554433221100"; });
  changed.emplace_back(
      "the graph", selftest::plan_config_key(selftest::plan_key(base), "c0 type 17\nc1 type 17\n", "engine 6 runtime-compiled knobs 3=1"));
  changed.emplace_back("the engine",
                       selftest::plan_config_key(selftest::plan_key(base), "c0 type 17\n", "engine 2 runtime-compiled knobs 3=1"));
  changed.emplace_back("a knob",
                       selftest::plan_config_key(selftest::plan_key(base), "c0 type 17\n", "engine 6 runtime-compiled knobs 3=2"));
  for (const auto& [what, key] : changed) {
    EXPECT_NE(key.text(), reference.text()) << what;
    EXPECT_NE(key.file_name("cudnn-plan"), reference.file_name("cudnn-plan")) << what;
  }
  // The same inputs, the same key.
  EXPECT_EQ(selftest::plan_config_key(selftest::plan_key(base), "c0 type 17\n", "engine 6 runtime-compiled knobs 3=1").text(),
            reference.text());
}

TEST(KernelCacheKey, EveryCubinInputChangesTheKey) {
  const std::vector<std::string> options = {"--gpu-architecture=sm_90", "--std=c++17"};
  const CacheKey reference = selftest::cubin_key("nvrtc A", "source", options, "sm_90");
  EXPECT_NE(selftest::cubin_key("nvrtc B", "source", options, "sm_90").file_name("reference-cubin"),
            reference.file_name("reference-cubin"));
  EXPECT_NE(selftest::cubin_key("nvrtc A", "source.", options, "sm_90").file_name("reference-cubin"),
            reference.file_name("reference-cubin"));
  EXPECT_NE(selftest::cubin_key("nvrtc A", "source", {"--gpu-architecture=sm_90", "--std=c++20"}, "sm_90").file_name("reference-cubin"),
            reference.file_name("reference-cubin"));
  EXPECT_NE(selftest::cubin_key("nvrtc A", "source", options, "sm_100").file_name("reference-cubin"),
            reference.file_name("reference-cubin"));
  // The kind is part of the name too.
  EXPECT_NE(reference.file_name("cudnn-plan"), reference.file_name("reference-cubin"));
}

TEST(KernelCacheKey, LibraryIdentityFollowsTheFileAndItsSiblings) {
  TempDir dir;
  write_text(dir.path / "libcudnn.so.9", "shim");
  write_text(dir.path / "libcudnn_engines_runtime_compiled.so.9", "engines");
  write_text(dir.path / "unrelated.so", "x");
  const std::string shim = (dir.path / "libcudnn.so.9").string();
  const std::string before = selftest::libraries_identity({shim}, {"libcudnn"});
  EXPECT_NE(before.find("libcudnn_engines_runtime_compiled.so.9"), std::string::npos) << before;
  EXPECT_EQ(before.find("unrelated.so"), std::string::npos) << before;
  // A sibling rewritten (size), replaced (inode) or touched (mtime): another identity.
  write_text(dir.path / "libcudnn_engines_runtime_compiled.so.9", "engines, rebuilt");
  const std::string resized = selftest::libraries_identity({shim}, {"libcudnn"});
  EXPECT_NE(resized, before);
  fs::rename(dir.path / "libcudnn.so.9", dir.path / "old");
  write_text(dir.path / "libcudnn.so.9", "shim");
  const std::string replaced = selftest::libraries_identity({shim}, {"libcudnn"});
  EXPECT_NE(replaced, resized);
  fs::last_write_time(dir.path / "libcudnn.so.9", fs::last_write_time(dir.path / "libcudnn.so.9") - std::chrono::hours(1));
  EXPECT_NE(selftest::libraries_identity({shim}, {"libcudnn"}), replaced);
  EXPECT_NE(selftest::file_identity_text("/nonexistent/libnvrtc.so").find("missing"), std::string::npos);
}

TEST(KernelCacheFiles, StoredPayloadLoadsBackForItsKeyOnly) {
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  ASSERT_TRUE(cache.enabled()) << cache.why_off();
  std::string payload("{\"json\": 1}\0binary\xff", 19);
  ASSERT_TRUE(cache.store("cudnn-plan", key_of("a"), payload));
  auto back = cache.load("cudnn-plan", key_of("a"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, payload);
  auto other = cache.load("cudnn-plan", key_of("b"));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().kind, util::ErrorKind::not_found);
  // Atomic: the file is whole under its name, private, and no temporary is left beside it.
  struct stat st {};
  ASSERT_EQ(::lstat((dir.path / key_of("a").file_name("cudnn-plan")).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (const auto& e : fs::directory_iterator(dir.path)) EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos);
}

TEST(KernelCacheFiles, AnotherKeyUnderTheSameNameIsRefused) {
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  ASSERT_TRUE(cache.store("cudnn-plan", key_of("b"), "payload of b"));
  fs::rename(dir.path / key_of("b").file_name("cudnn-plan"), dir.path / key_of("a").file_name("cudnn-plan"));
  auto loaded = cache.load("cudnn-plan", key_of("a"));
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("another key"), std::string::npos) << loaded.error().message;
}

TEST(KernelCacheFiles, CorruptTruncatedAndOversizedFilesAreRefused) {
  TempDir dir;
  KernelCache::Limits limits;
  limits.max_file_bytes = 4096;
  auto cache = KernelCache::open(dir.path.string(), limits);
  const fs::path file = dir.path / key_of("a").file_name("cudnn-plan");
  const std::string payload(1000, 'p');
  ASSERT_TRUE(cache.store("cudnn-plan", key_of("a"), payload));
  const std::string good = read_text(file);
  // One byte of the payload changed: its digest no longer matches.
  std::string corrupt = good;
  corrupt[corrupt.find("ppp") + 10] = 'q';
  write_text(file, corrupt);
  EXPECT_FALSE(cache.load("cudnn-plan", key_of("a")));
  write_text(file, good.substr(0, good.size() / 2));
  EXPECT_FALSE(cache.load("cudnn-plan", key_of("a")));
  write_text(file, "");
  EXPECT_FALSE(cache.load("cudnn-plan", key_of("a")));
  write_text(file, good + std::string(5000, 'x'));
  auto oversized = cache.load("cudnn-plan", key_of("a"));
  ASSERT_FALSE(oversized);
  EXPECT_NE(oversized.error().message.find("over the limit"), std::string::npos) << oversized.error().message;
  // A payload too large to keep is not written.
  EXPECT_FALSE(cache.store("cudnn-plan", key_of("big"), std::string(8192, 'b')));
  EXPECT_FALSE(fs::exists(dir.path / key_of("big").file_name("cudnn-plan")));
  write_text(file, good);
  EXPECT_TRUE(cache.load("cudnn-plan", key_of("a")));
}

TEST(KernelCacheFiles, AFileOthersMayWriteOrOwnIsRefused) {
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  const fs::path file = dir.path / key_of("a").file_name("cudnn-plan");
  ASSERT_TRUE(cache.store("cudnn-plan", key_of("a"), "payload"));
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_write, fs::perm_options::replace);
  auto group_writable = cache.load("cudnn-plan", key_of("a"));
  ASSERT_FALSE(group_writable);
  EXPECT_EQ(group_writable.error().kind, util::ErrorKind::permission);
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  EXPECT_TRUE(cache.load("cudnn-plan", key_of("a")));
  if (::geteuid() != 0) GTEST_SKIP() << "another owner needs root to chown";
  ASSERT_EQ(::chown(file.c_str(), 12345, 12345), 0);
  auto foreign = cache.load("cudnn-plan", key_of("a"));
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().kind, util::ErrorKind::permission);
  EXPECT_NE(foreign.error().message.find("uid 12345"), std::string::npos);
}

TEST(KernelCacheFiles, ASymlinkIsRefusedAndReplacedNotFollowed) {
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  const fs::path file = dir.path / key_of("a").file_name("cudnn-plan");
  ASSERT_TRUE(cache.store("cudnn-plan", key_of("a"), "payload"));
  fs::rename(file, dir.path / "elsewhere");
  fs::create_symlink(dir.path / "elsewhere", file);
  const std::string target = read_text(dir.path / "elsewhere");
  auto linked = cache.load("cudnn-plan", key_of("a"));
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().kind, util::ErrorKind::permission);
  FakeCompiler fake;
  auto kept = selftest::keep_or_build(cache, "cudnn-plan", key_of("a"), fake.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(fake.builds, 1);
  EXPECT_TRUE(kept->stored);
  EXPECT_FALSE(fs::is_symlink(file));                   // the link itself was replaced
  EXPECT_EQ(read_text(dir.path / "elsewhere"), target); // and what it named is untouched
  EXPECT_TRUE(cache.load("cudnn-plan", key_of("a")));
}

TEST(KernelCacheFiles, ADirectoryOthersMayWriteTurnsTheCacheOff) {
  TempDir dir;
  fs::create_directory(dir.path / "kernels");
  fs::permissions(dir.path / "kernels", fs::perms::all, fs::perm_options::replace);
  auto cache = KernelCache::open((dir.path / "kernels").string());
  EXPECT_FALSE(cache.enabled());
  EXPECT_NE(cache.why_off().find("lets other users write"), std::string::npos) << cache.why_off();
  EXPECT_FALSE(KernelCache::open("").enabled()); // --no-cache: no directory
}

TEST(KernelCacheFiles, TheOldestFilesGoBeyondTheLimit) {
  TempDir dir;
  KernelCache::Limits limits;
  limits.max_files = 2;
  auto cache = KernelCache::open(dir.path.string(), limits);
  for (const char* k : {"1", "2", "3"}) {
    ASSERT_TRUE(cache.store("cudnn-plan", key_of(k), k));
    // Distinct mtimes, oldest first.
    auto f = dir.path / key_of(k).file_name("cudnn-plan");
    if (fs::exists(f)) fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::minutes(10 - std::atoi(k)));
  }
  ASSERT_TRUE(cache.store("cudnn-plan", key_of("4"), "4"));
  EXPECT_FALSE(cache.load("cudnn-plan", key_of("1")));
  EXPECT_FALSE(cache.load("cudnn-plan", key_of("2")));
  EXPECT_TRUE(cache.load("cudnn-plan", key_of("3")));
  EXPECT_TRUE(cache.load("cudnn-plan", key_of("4")));
}

TEST(KernelCacheFallback, CompiledOnceThenLoaded) {
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  FakeCompiler first;
  auto kept = selftest::keep_or_build(cache, "cudnn-plan", key_of("a"), first.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->source, KeptArtifact::Source::compiled);
  EXPECT_EQ(kept->why_compiled, "no entry");
  EXPECT_TRUE(kept->stored);
  EXPECT_EQ(first.builds, 1);
  FakeCompiler second;
  kept = selftest::keep_or_build(cache, "cudnn-plan", key_of("a"), second.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->source, KeptArtifact::Source::loaded);
  EXPECT_EQ(second.builds, 0);
  EXPECT_EQ(second.restored, "compiled-payload");
}

TEST(KernelCacheFallback, ACorruptOrRefusedCopyCompilesAndIsOverwritten) {
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  const fs::path file = dir.path / key_of("a").file_name("cudnn-plan");
  write_text(file, "not a cache file");
  FakeCompiler corrupt;
  auto kept = selftest::keep_or_build(cache, "cudnn-plan", key_of("a"), corrupt.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->source, KeptArtifact::Source::compiled);
  EXPECT_EQ(corrupt.restores, 0);
  EXPECT_EQ(corrupt.builds, 1);
  EXPECT_TRUE(cache.load("cudnn-plan", key_of("a"))); // rewritten whole
  // cuDNN refuses the copy (finalize fails): compiled as without a cache, and the copy replaced.
  FakeCompiler refusing;
  refusing.refuse = true;
  refusing.built = "fresh";
  kept = selftest::keep_or_build(cache, "cudnn-plan", key_of("a"), refusing.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->source, KeptArtifact::Source::compiled);
  EXPECT_EQ(refusing.restores, 1);
  EXPECT_EQ(refusing.builds, 1);
  EXPECT_NE(kept->why_compiled.find("fake refusal"), std::string::npos) << kept->why_compiled;
  EXPECT_EQ(*cache.load("cudnn-plan", key_of("a")), "fresh");
}

TEST(KernelCacheFallback, ABuildFailureIsTheBuildsErrorAndNothingIsKept) {
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  write_text(dir.path / key_of("a").file_name("cudnn-plan"), "garbage");
  FakeCompiler failing;
  failing.build_fails = true;
  auto kept = selftest::keep_or_build(cache, "cudnn-plan", key_of("a"), failing.steps());
  ASSERT_FALSE(kept);
  EXPECT_EQ(kept.error().message, "No valid execution plans built (fake)"); // cuDNN's, not the cache's
  EXPECT_EQ(read_text(dir.path / key_of("a").file_name("cudnn-plan")), "garbage");
}

TEST(KernelCacheFallback, ACacheThatCannotWriteOrIsOffFailsNothing) {
  TempDir dir;
  fs::create_directory(dir.path / "kernels", dir.path);
  fs::permissions(dir.path / "kernels", fs::perms::owner_all, fs::perm_options::replace);
  auto cache = KernelCache::open((dir.path / "kernels").string());
  ASSERT_TRUE(cache.enabled());
  fs::remove(dir.path / "kernels"); // gone after it was opened: nothing can be written
  FakeCompiler fake;
  auto kept = selftest::keep_or_build(cache, "cudnn-plan", key_of("a"), fake.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->source, KeptArtifact::Source::compiled);
  EXPECT_FALSE(kept->stored);
  EXPECT_FALSE(kept->store_error.empty());
  FakeCompiler no_json;
  no_json.serialize_fails = true;
  auto usable = KernelCache::open(dir.path.string());
  kept = selftest::keep_or_build(usable, "cudnn-plan", key_of("a"), no_json.steps());
  ASSERT_TRUE(kept);
  EXPECT_NE(kept->store_error.find("no JSON representation"), std::string::npos);
  // --no-cache: compiled every time, nothing written anywhere.
  auto off = KernelCache::open("");
  FakeCompiler bypassed;
  kept = selftest::keep_or_build(off, "cudnn-plan", key_of("a"), bypassed.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(bypassed.builds, 1);
  EXPECT_EQ(bypassed.restores, 0);
  EXPECT_FALSE(kept->stored);
  EXPECT_NE(kept->why_compiled.find("the cache is off"), std::string::npos) << kept->why_compiled;
  // A cache told to skip its copies (a check that failed with them) compiles and replaces them.
  ASSERT_TRUE(usable.store("cudnn-plan", key_of("b"), "old"));
  usable.skip_loads("compiled again");
  FakeCompiler refreshed;
  kept = selftest::keep_or_build(usable, "cudnn-plan", key_of("b"), refreshed.steps());
  ASSERT_TRUE(kept);
  EXPECT_EQ(refreshed.builds, 1);
  EXPECT_TRUE(kept->stored);
  EXPECT_EQ(*KernelCache::open(dir.path.string()).load("cudnn-plan", key_of("b")), "compiled-payload");
}

namespace {
std::string toolkit_nvrtc() {
  for (const char* p : {"/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so"})
    if (fs::exists(p)) return p;
  return {};
}
} // namespace

TEST(KernelCacheReference, TheCubinIsCompiledOnceThenLoadedAndACorruptCopyRecompiles) {
  std::string path = toolkit_nvrtc();
  if (path.empty()) GTEST_SKIP() << "no CUDA toolkit NVRTC on this machine";
  auto nvrtc = gpuapi::Nvrtc::load(std::vector<std::string>{path});
  ASSERT_TRUE(nvrtc) << nvrtc.error().message;
  TempDir dir;
  auto cache = KernelCache::open(dir.path.string());
  auto first = selftest::cached_reference(cache, *nvrtc, 90, selftest::ReferenceKernel::simple);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->kept.source, KeptArtifact::Source::compiled);
  EXPECT_TRUE(first->kept.stored);
  auto second = selftest::cached_reference(cache, *nvrtc, 90, selftest::ReferenceKernel::simple);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->kept.source, KeptArtifact::Source::loaded);
  EXPECT_EQ(second->cubin, first->cubin);
  // Another architecture is another entry.
  auto sm80 = selftest::cached_reference(cache, *nvrtc, 80, selftest::ReferenceKernel::simple);
  ASSERT_TRUE(sm80);
  EXPECT_EQ(sm80->kept.source, KeptArtifact::Source::compiled);
  // A copy whose payload is not an ELF image (stored for the right key) is refused and recompiled.
  ASSERT_TRUE(cache.store("reference-cubin", selftest::reference_key(*nvrtc, 90, selftest::ReferenceKernel::simple), "not ELF"));
  auto third = selftest::cached_reference(cache, *nvrtc, 90, selftest::ReferenceKernel::simple);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->kept.source, KeptArtifact::Source::compiled);
  EXPECT_EQ(third->cubin, first->cubin);
  EXPECT_NE(third->kept.why_compiled.find("not an ELF image"), std::string::npos) << third->kept.why_compiled;
}

// The parent hands the cuDNN child the cache directory it was given (app: none with --no-cache),
// and nothing when it has none: the child then compiles everything and writes nothing.
TEST(KernelCachePlan, TheCudnnChildGetsTheDirectoryOnlyWhenThereIsOne) {
  model::Workload w;
  ASSERT_TRUE(w.set_text("qkv_format", "bshd"));
  ASSERT_TRUE(w.complete());
  for (std::string dir : {"/tmp/nvte-kernels-for-the-test", ""}) {
    selftest::Plan plan;
    plan.runner.executable = FAKE_CHILD;
    plan.runner.timeout = std::chrono::milliseconds(20000);
    plan.workloads = {w};
    plan.python_skipped = "not in this test";
    plan.kernel_cache = dir;
    auto results = selftest::run_all(plan);
    int cudnn = 0;
    for (const auto& o : results.outcomes) {
      if (o.check != "cudnn_sdpa" || !o.rerun.is_object()) continue;
      ++cudnn;
      const auto& args = o.rerun["args"];
      if (dir.empty()) EXPECT_FALSE(args.contains("kernel_cache")) << args.dump();
      else EXPECT_EQ(args.value("kernel_cache", ""), dir) << args.dump();
    }
    EXPECT_EQ(cudnn, 1);
  }
}

// A check that failed at execution or numerics with a kernel from the cache runs again with every
// kernel compiled; its answer is that run's. A failure with compiled kernels, or before the
// kernels ran, is the check's own and runs once.
TEST(KernelCacheFallback, ACheckThatFailedWithCachedKernelsRunsAgainCompiled) {
  std::vector<Json> calls;
  auto fake_check = [&](const Json& first_result) {
    return [&calls, first_result](const Json& args) -> Json {
      calls.push_back(args);
      if (calls.size() == 1) return first_result;
      return Json{{"status", "ok"}, {"plan_cache", {{"source", "compiled"}}}};
    };
  };
  const Json loaded_numerics{
      {"status", "failed"}, {"stage", "numerics"}, {"error", "cuDNN's output differs"}, {"plan_cache", {{"source", "loaded"}}}};
  Json result = selftest::run_with_cache_fallback(Json{{"dim_qk", 128}}, fake_check(loaded_numerics));
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_FALSE(calls[0].contains("kernel_cache_refresh"));
  EXPECT_TRUE(calls[1].contains("kernel_cache_refresh"));
  EXPECT_EQ(calls[1]["dim_qk"], 128);
  EXPECT_EQ(result["status"], "ok");
  EXPECT_NE(result.value("kernel_cache_fallback", "").find("cuDNN's output differs"), std::string::npos) << result.dump();
  // The backward's result carries the forward's: a cached reference there counts too.
  calls.clear();
  Json backward_execute{{"status", "failed"},
                        {"stage", "execute"},
                        {"error", "cudnnBackendExecute (backward): ..."},
                        {"forward", {{"status", "ok"}, {"reference_cache", {{"source", "loaded"}}}}}};
  selftest::run_with_cache_fallback(Json::object(), fake_check(backward_execute));
  EXPECT_EQ(calls.size(), 2u);
  // Compiled kernels, or a failure at the plan: the answer stands.
  for (const Json& own : {Json{{"status", "failed"}, {"stage", "numerics"}, {"plan_cache", {{"source", "compiled"}}}},
                          Json{{"status", "failed"}, {"stage", "plan"}, {"plan_cache", {{"source", "loaded"}}}},
                          Json{{"status", "ok"}, {"plan_cache", {{"source", "loaded"}}}}}) {
    calls.clear();
    Json answer = selftest::run_with_cache_fallback(Json::object(), fake_check(own));
    EXPECT_EQ(calls.size(), 1u) << own.dump();
    EXPECT_EQ(answer, own);
  }
}

namespace {
std::string toolkit_cudnn() {
  for (const char* p : {"/usr/local/cuda/lib64/libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"})
    if (fs::exists(p)) return p;
  return {};
}
} // namespace

// The graph's description (the key's "graph") is the same for the same graph in any process and
// changes with anything set on a descriptor; it names descriptors by number, never by address.
TEST(KernelCacheKey, TheGraphsDescriptionFollowsTheGraph) {
  std::string path = toolkit_cudnn();
  if (path.empty()) GTEST_SKIP() << "no cuDNN 9 on this machine";
  auto cudnn = gpuapi::Cudnn::load(std::vector<std::string>{path});
  ASSERT_TRUE(cudnn) << cudnn.error().message;
  auto description = [&](bool causal, std::int64_t seq) {
    selftest::SdpaShape s;
    s.causal = causal, s.seq_q = s.seq_kv = seq;
    auto l = selftest::make_layout(s);
    selftest::SdpaGraph graph(*cudnn);
    EXPECT_TRUE(graph.build_operations(s, *l));
    return graph.description();
  };
  const std::string causal = description(true, 512);
  EXPECT_FALSE(causal.empty());
  EXPECT_EQ(description(true, 512), causal);
  EXPECT_NE(description(false, 512), causal);
  EXPECT_NE(description(true, 1024), causal);
  EXPECT_EQ(causal.find("0x"), std::string::npos);
}
