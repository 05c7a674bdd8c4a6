// The rule for untrusted trees (probe/tree_policy.hpp, docs/reliability.md "Untrusted trees";
// audit 2026-12-01 items 1, 3 and 8): a tree other than this machine's "/" is read, never loaded;
// its files are read inside it; as root only a library no other user can change is loaded.
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"
#include "probe/tree_policy.hpp"
#include "support/node_fixture.hpp"
#include "util/file.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace probe;
using test_support::NodeFixture;

namespace {

// A string fact, or "" (the shared str() says "<absent>").
std::string fact_or_empty(const model::Facts& f, const std::string& name) { return f.get_string(name).value_or(""); }

// A scratch directory removed at the end.
struct Scratch {
  Scratch() {
    char name[] = "/tmp/nvte-untrusted-XXXXXX";
    if (::mkdtemp(name)) path = name;
  }
  ~Scratch() { fs::remove_all(path); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  fs::path path;
};

} // namespace

TEST(UntrustedTree, WhatIsLive) {
  Host live;
  EXPECT_EQ(tree_kind(live), TreeKind::live);
  Host tree;
  tree.root = "/tmp/image/rootfs";
  EXPECT_EQ(tree_kind(tree), TreeKind::examined);
  Host image_env; // "/" read with an image's environment (--image-config)
  image_env.image_environment = true;
  EXPECT_EQ(tree_kind(image_env), TreeKind::examined);
  EXPECT_TRUE(may_run_named_paths(FactsOrigin::live));
  EXPECT_FALSE(may_run_named_paths(FactsOrigin::examined));
  EXPECT_FALSE(may_run_named_paths(FactsOrigin::data));
}

// Audit item 1: the copy is listed, its version is unknown, and it was never loaded (the fixture's
// libcudnn.so.9 has no version but its own cudnnGetVersion, which NodeFixture's host may call).
TEST(UntrustedTree, ALibraryOfAnExaminedTreeIsNeverLoaded) {
  NodeFixture node("broken-node");
  Host host = node.host();
  host.load_fixture_libraries = false; // what every tree other than "/" is outside the tests
  model::Facts f;
  run_python_probe(host, f);
  run_libraries_probe(host, f);
  EXPECT_EQ(f.get_int("cudnn.copy_count"), 1);
  EXPECT_FALSE(f.has("cudnn.copies[0].version")) << "a version was read by loading the file";
  EXPECT_NE(fact_or_empty(f, "probe.libraries.reason")
                .find("/opt/libs/libcudnn.so.9: version unknown without loading it (a file of the examined tree "),
            std::string::npos)
      << fact_or_empty(f, "probe.libraries.reason");
  // The same node with an image's environment at "/" is examined too.
  Host image_env;
  image_env.image_environment = true;
  auto why = load_refusal(image_env, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("image"), std::string::npos) << *why;
}

// Audit item 8, the part that runs unprivileged: the check as root sees it (tests/reliability/
// root_untrusted.sh runs the audit's reproducer as root, with another user's files).
TEST(UntrustedTree, AsRootOnlyALibraryNoOtherUserCanChangeIsLoaded) {
  Scratch dir;
  ASSERT_FALSE(dir.path.empty());
  fs::create_directories(dir.path / "theirs");
  fs::permissions(dir.path,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir.path / "theirs", fs::perms::all); // 0777, not sticky
  ASSERT_TRUE(util::write_file_atomic(dir.path / "theirs/libcudnn.so.9", "x").ok());
  auto open_dir = ownership_refusal(dir.path / "theirs/libcudnn.so.9", 0);
  ASSERT_TRUE(open_dir.has_value());
  if (::geteuid() == 0) {
    EXPECT_EQ(*open_dir, "directory " + (dir.path / "theirs").string() + " is writable by all users");
  } else {
    EXPECT_EQ(*open_dir, "owned by uid " + std::to_string(::geteuid())); // the file itself: not root's
  }
  // Not root: nothing to protect (a library this user loads runs as this user).
  EXPECT_FALSE(ownership_refusal(dir.path / "theirs/libcudnn.so.9", 1000).has_value());
  if (::geteuid() != 0) GTEST_SKIP() << "the rest needs files of another owner (root)";
  fs::permissions(dir.path / "theirs",
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  EXPECT_FALSE(ownership_refusal(dir.path / "theirs/libcudnn.so.9", 0).has_value());
  ASSERT_EQ(::chown((dir.path / "theirs/libcudnn.so.9").c_str(), 65534, 65534), 0);
  EXPECT_EQ(ownership_refusal(dir.path / "theirs/libcudnn.so.9", 0).value_or(""), "owned by uid 65534");
  ASSERT_EQ(::chown((dir.path / "theirs/libcudnn.so.9").c_str(), 0, 100), 0);
  ASSERT_EQ(::chmod((dir.path / "theirs/libcudnn.so.9").c_str(), 0664), 0);
  EXPECT_EQ(ownership_refusal(dir.path / "theirs/libcudnn.so.9", 0).value_or(""), "writable by group 100");
  // A sticky directory writable by all (/tmp) is fine for root's own file in it.
  ASSERT_EQ(::chmod((dir.path / "theirs/libcudnn.so.9").c_str(), 0644), 0);
  ASSERT_EQ(::chown((dir.path / "theirs/libcudnn.so.9").c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod((dir.path / "theirs").c_str(), 01777), 0);
  EXPECT_FALSE(ownership_refusal(dir.path / "theirs/libcudnn.so.9", 0).has_value());
  ASSERT_EQ(::chown((dir.path / "theirs").c_str(), 65534, 65534), 0);
  EXPECT_EQ(ownership_refusal(dir.path / "theirs/libcudnn.so.9", 0).value_or(""),
            "directory " + (dir.path / "theirs").string() + " is owned by uid 65534");
}

// Audit item 3: an image's /etc/os-release and /etc/hostname that link to files of the node are
// the image's own paths, read inside the image.
TEST(UntrustedTree, SystemFilesAreReadInsideTheTree) {
  Scratch dir;
  ASSERT_FALSE(dir.path.empty());
  fs::path root = dir.path / "rootfs";
  fs::create_directories(root / "etc");
  ASSERT_TRUE(util::write_file_atomic(dir.path / "node-file", "PRETTY_NAME=\"NODE SECRET\"\nID=nodesecret\n").ok());
  ASSERT_TRUE(util::write_file_atomic(dir.path / "shadow-standin", "root:$6$HASH$abc:19000:0:99999:7:::\n").ok());
  fs::create_symlink(dir.path / "node-file", root / "etc/os-release");
  fs::create_symlink(dir.path / "shadow-standin", root / "etc/hostname");
  fs::create_directories(root / "usr/lib");
  ASSERT_TRUE(util::write_file_atomic(root / "usr/lib/os-release", "PRETTY_NAME=\"Image OS\"\nID=imageos\n").ok());
  Host host;
  host.root = root;
  model::Facts f;
  run_system_probe(host, f);
  EXPECT_EQ(fact_or_empty(f, "system.os_id"), "imageos"); // /etc/os-release is missing inside the image
  EXPECT_FALSE(f.has("system.hostname")) << fact_or_empty(f, "system.hostname");
  for (const auto& [name, value] : f.entries()) EXPECT_EQ(value.to_string().find("SECRET"), std::string::npos) << name;
}

// Audit item 3: a device node in the image itself (a crafted layer) is never read; a terminal's
// numbers stand in for /dev/console, whose read blocks for ever.
TEST(UntrustedTree, ADeviceInTheTreeIsNeverRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  struct stat pts {};
  ASSERT_EQ(::stat(::ptsname(master), &pts), 0);
  Scratch dir;
  fs::path root = dir.path / "rootfs";
  fs::create_directories(root / "etc");
  fs::create_directories(root / "proc/1");
  for (const char* file : {"etc/os-release", "etc/hostname", "proc/1/cgroup"})
    ASSERT_EQ(::mknod((root / file).c_str(), S_IFCHR | 0644, pts.st_rdev), 0) << file;
  Host host;
  host.root = root;
  auto outcome = util::run_function(
      [&](int) {
        model::Facts f;
        run_system_probe(host, f);
        return f.has("system.hostname") ? 1 : 0;
      },
      std::chrono::seconds(10));
  ::close(master);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->timed_out) << "the system probe blocked on a device of the tree";
  EXPECT_EQ(outcome->exit_code.value_or(-1), 0);
}

// libpci opens sysfs files itself: a tree whose PCI sysfs leads out of it is not scanned.
TEST(UntrustedTree, PciSysfsThatLeadsOutOfTheTreeIsNotScanned) {
  NodeFixture node("h100-node");
  Host host = node.host();
  node.symlink("/sys/bus/pci/devices/0000:00:07.0", "/etc"); // absolute: the machine's /etc to the kernel
  model::Facts f;
  run_pci_probe(host, f);
  EXPECT_EQ(fact_or_empty(f, "probe.pci.status"), "error");
  EXPECT_NE(fact_or_empty(f, "probe.pci.reason").find("0000:00:07.0 leads out of the tree"), std::string::npos)
      << fact_or_empty(f, "probe.pci.reason");
  EXPECT_EQ(f.count("gpu"), 0u);
  // Without the link, the same tree is scanned.
  NodeFixture clean("h100-node");
  model::Facts g;
  run_pci_probe(clean.host(), g);
  EXPECT_EQ(fact_or_empty(g, "probe.pci.status"), "ok");
}
