// The python probe's python.bytecode[] facts: whether `import` finds usable bytecode, read
// from the package's __init__.py and its __pycache__ file's 16-byte header, on fixture trees.
#include "probe/bytecode.hpp"
#include "probe/node_probes.hpp"
#include "support/node_fixture.hpp"
#include "support/probe_helpers.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

using namespace probe;
using test_support::NodeFixture;
using test_support::str;

namespace {

const std::string k_torch = "/opt/torch/.venv/lib/python3.12/site-packages/torch"; // h100-node: CPython 3.12
constexpr std::uint32_t k_mtime = 1700000000;

void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A .pyc header as CPython 3.12 writes it: magic 3531 + "\r\n", flags, then the source's mtime
// and size (timestamp) or its 8-byte hash (hash-based), and a byte of code after it.
std::string pyc(std::uint32_t flags, std::uint32_t a, std::uint32_t b) {
  std::string out = "\xcb\x0d\r\n";
  put32(out, flags);
  put32(out, a);
  put32(out, b);
  return out + "\xe3";
}

// The source with a known mtime (a reproducible build normalises them), and its size.
std::uint32_t pin_source(const NodeFixture& node, const std::string& dir, std::uint32_t mtime = k_mtime) {
  std::string path = node.path(dir + "/__init__.py").string();
  struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
  EXPECT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return static_cast<std::uint32_t>(st.st_size);
}

model::Facts probe_python(const Host& host) {
  model::Facts facts;
  run_python_probe(host, facts);
  return facts;
}

} // namespace

TEST(Bytecode, CacheTag) { EXPECT_EQ(cpython_cache_tag(3, 12), "cpython-312"); }

TEST(Bytecode, NoPycIsMissing) {
  NodeFixture node("h100-node"); // torch without __pycache__, as pip --no-compile leaves it
  auto facts = probe_python(node.host());
  EXPECT_EQ(str(facts, "python.bytecode[0].status"), "missing");
  EXPECT_EQ(str(facts, "python.bytecode[0].reason"), "no __pycache__/__init__.cpython-312.pyc");
  EXPECT_EQ(str(facts, "python.bytecode[0].package"), "torch");
  EXPECT_EQ(facts.count("python.bytecode"), 1u); // no TE on this node
  // A pyc of another interpreter (3.11) is not the one 3.12 reads.
  node.write(k_torch + "/__pycache__/__init__.cpython-311.pyc", pyc(0, k_mtime, pin_source(node, k_torch)));
  EXPECT_EQ(str(probe_python(node.host()), "python.bytecode[0].status"), "missing");
}

TEST(Bytecode, TimestampPycThatMatchesIsOk) {
  NodeFixture node("h100-node");
  std::uint32_t size = pin_source(node, k_torch);
  node.write(k_torch + "/__pycache__/__init__.cpython-312.pyc", pyc(0, k_mtime, size));
  auto facts = probe_python(node.host());
  EXPECT_EQ(str(facts, "python.bytecode[0].status"), "ok") << str(facts, "python.bytecode[0].reason");
  EXPECT_EQ(str(facts, "python.bytecode[0].reason"), "__pycache__/__init__.cpython-312.pyc matches __init__.py's mtime and size");
}

// Compiled, then the sources' mtimes changed (SOURCE_DATE_EPOCH normalisation in an image build,
// a copy that did not keep them), or the source edited: Python compiles it again.
TEST(Bytecode, TimestampPycOfAnotherMtimeOrSizeIsStale) {
  NodeFixture node("h100-node");
  std::uint32_t size = pin_source(node, k_torch);
  node.write(k_torch + "/__pycache__/__init__.cpython-312.pyc", pyc(0, k_mtime + 1, size));
  auto facts = probe_python(node.host());
  EXPECT_EQ(str(facts, "python.bytecode[0].status"), "stale");
  EXPECT_EQ(str(facts, "python.bytecode[0].reason"), "__pycache__/__init__.cpython-312.pyc records source mtime 1700000001 and size " +
                                                         std::to_string(size) + "; __init__.py has mtime 1700000000 and size " +
                                                         std::to_string(size));
  node.write(k_torch + "/__pycache__/__init__.cpython-312.pyc", pyc(0, k_mtime, size + 1));
  EXPECT_EQ(str(probe_python(node.host()), "python.bytecode[0].status"), "stale");
  // Python compares the mtime modulo 2^32.
  std::uint64_t late = (std::uint64_t{1} << 32) + k_mtime;
  std::string path = node.path(k_torch + "/__init__.py").string();
  struct timespec times[2] = {{static_cast<time_t>(late), 0}, {static_cast<time_t>(late), 0}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0) {
    node.write(k_torch + "/__pycache__/__init__.cpython-312.pyc", pyc(0, k_mtime, size));
    EXPECT_EQ(str(probe_python(node.host()), "python.bytecode[0].status"), "ok");
  }
}

TEST(Bytecode, HashBasedPycIsOkWhateverTheMtime) {
  NodeFixture node("h100-node");
  pin_source(node, k_torch);
  node.write(k_torch + "/__pycache__/__init__.cpython-312.pyc", pyc(1, 0xdeadbeef, 0x12345678));
  auto facts = probe_python(node.host());
  EXPECT_EQ(str(facts, "python.bytecode[0].status"), "ok");
  EXPECT_EQ(str(facts, "python.bytecode[0].reason"), "__pycache__/__init__.cpython-312.pyc is hash-based (unchecked, PEP 552)");
  node.write(k_torch + "/__pycache__/__init__.cpython-312.pyc", pyc(3, 0xdeadbeef, 0x12345678));
  EXPECT_EQ(str(probe_python(node.host()), "python.bytecode[0].reason"),
            "__pycache__/__init__.cpython-312.pyc is hash-based (checked, PEP 552)");
}

// Headers Python refuses (EOFError, ImportError in _classify_pyc) make it compile the source.
TEST(Bytecode, HeadersPythonRefusesAreStale) {
  NodeFixture node("h100-node");
  std::uint32_t size = pin_source(node, k_torch);
  const std::string file = k_torch + "/__pycache__/__init__.cpython-312.pyc";
  struct Case {
    std::string bytes, reason;
  };
  for (const auto& c : std::vector<Case>{
           {pyc(0, k_mtime, size).substr(0, 10), "is 10 bytes, shorter than its 16-byte header"},
           {"\xcb\x0d\n\n" + pyc(0, k_mtime, size).substr(4), "does not start with a CPython magic number"},
           {pyc(4, k_mtime, size), "has flags 4, which Python refuses"},
       }) {
    node.write(file, c.bytes);
    auto facts = probe_python(node.host());
    EXPECT_EQ(str(facts, "python.bytecode[0].status"), "stale") << c.reason;
    EXPECT_EQ(str(facts, "python.bytecode[0].reason"), "__pycache__/__init__.cpython-312.pyc " + c.reason);
  }
}

TEST(Bytecode, TransformerEngineToo) {
  NodeFixture node("a100-node"); // CPython 3.10, torch and TE 2.3
  const std::string te = "/opt/venv/lib/python3.10/site-packages/transformer_engine";
  node.write(te + "/__pycache__/__init__.cpython-310.pyc", pyc(0, k_mtime, pin_source(node, te)));
  auto facts = probe_python(node.host());
  EXPECT_EQ(str(facts, "python.bytecode[0].package"), "torch");
  EXPECT_EQ(str(facts, "python.bytecode[0].status"), "missing");
  EXPECT_EQ(str(facts, "python.bytecode[1].package"), "transformer_engine");
  EXPECT_EQ(str(facts, "python.bytecode[1].status"), "ok") << str(facts, "python.bytecode[1].reason");
}

// PYTHONPYCACHEPREFIX moves the bytecode to a tree of its own; a relative one depends on the
// job's directory, so nothing is said.
TEST(Bytecode, PycachePrefixIsWherePythonLooks) {
  NodeFixture node("h100-node");
  std::uint32_t size = pin_source(node, k_torch);
  node.write("/var/cache/pyc" + k_torch + "/__init__.cpython-312.pyc", pyc(0, k_mtime, size));
  Host host = node.host();
  host.env["PYTHONPYCACHEPREFIX"] = "/var/cache/pyc";
  auto facts = probe_python(host);
  EXPECT_EQ(str(facts, "python.bytecode[0].status"), "ok") << str(facts, "python.bytecode[0].reason");
  host.env["PYTHONPYCACHEPREFIX"] = "pyc";
  EXPECT_EQ(probe_python(host).count("python.bytecode"), 0u);
}

TEST(Bytecode, EnvironmentRecordsWhetherPythonWritesBytecode) {
  NodeFixture node("h100-node");
  Host host = node.host();
  host.env["PYTHONDONTWRITEBYTECODE"] = "1";
  host.env["PYTHONPYCACHEPREFIX"] = "/var/cache/pyc";
  model::Facts facts;
  run_env_probe(host, facts);
  EXPECT_EQ(str(facts, "env.PYTHONDONTWRITEBYTECODE"), "1");
  EXPECT_EQ(str(facts, "env.PYTHONPYCACHEPREFIX"), "/var/cache/pyc");
}

// Whether the job's user may write the bytecode: yes in the fixture's copy for its owner, no for
// another user (root writes through any mode, so as root the probe runs as nobody).
TEST(Bytecode, WritableForTheOwnerNotForAnotherUser) {
  NodeFixture node("h100-node");
  EXPECT_EQ(probe_python(node.host()).get_bool("python.bytecode[0].writable"), true);
  for (auto p = node.root(); !p.empty() && p != p.root_path(); p = p.parent_path()) ::chmod(p.c_str(), 0755);
  if (::geteuid() != 0) {
    ASSERT_EQ(::chmod(node.path(k_torch).c_str(), 0555), 0);
    EXPECT_EQ(probe_python(node.host()).get_bool("python.bytecode[0].writable"), false);
    ::chmod(node.path(k_torch).c_str(), 0755);
    return;
  }
  auto outcome = util::run_function(
      [&](int result_fd) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) return 2;
        auto facts = probe_python(node.host());
        auto writable = facts.get_bool("python.bytecode[0].writable");
        util::write_all(result_fd, str(facts, "python.bytecode[0].status") + " " + (writable ? (*writable ? "yes" : "no") : "?"));
        return 0;
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(outcome.ok());
  ASSERT_EQ(outcome->exit_code.value_or(-1), 0) << outcome->describe();
  EXPECT_EQ(outcome->out, "missing no");
}
