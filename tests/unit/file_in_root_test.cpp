// util::read_file's refusals and util::open_file_in_root (audit 2026-12-01, item 3): a tree's
// symlinks never lead out of it, with openat2 and with the walk in user space alike, and no file
// but a regular one is ever opened, so a device or a terminal cannot block a read.
#include "util/file.hpp"
#include "util/file_in_root.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

// A scratch directory: a tree under it, and a "node file" beside the tree that no read of the
// tree may reach.
class Tree : public testing::Test {
protected:
  void SetUp() override {
    char name[] = "/tmp/nvte-in-root-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    m_dir = name;
    fs::create_directories(m_dir / "tree/etc");
    fs::create_directories(m_dir / "tree/usr/lib");
    ASSERT_TRUE(util::write_file_atomic(m_dir / "node-secret", "PRETTY_NAME=\"NODE SECRET\"\n").ok());
    ASSERT_TRUE(util::write_file_atomic(m_dir / "tree/usr/lib/os-release", "PRETTY_NAME=\"the image's own\"\n").ok());
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path tree() const { return m_dir / "tree"; }
  fs::path secret() const { return m_dir / "node-secret"; }
  void link(const std::string& node_path, const std::string& target) const {
    fs::create_directories((tree() / fs::path(node_path).relative_path()).parent_path());
    fs::create_symlink(target, tree() / fs::path(node_path).relative_path());
  }

  fs::path m_dir;
};

const util::RootResolver k_resolvers[] = {util::RootResolver::automatic, util::RootResolver::userspace};

std::string read_in(const fs::path& root, const std::string& path, util::RootResolver resolver, util::ErrorKind* kind = nullptr,
                    std::string* message = nullptr) {
  auto fd = util::open_file_in_root(root, path, resolver);
  if (!fd) {
    if (kind) *kind = fd.error().kind;
    if (message) *message = fd.error().message;
    return "<error>";
  }
  auto text = util::read_open_file(fd->get(), path, 1 << 20, util::Overflow::error);
  return text ? *text : "<error>";
}

} // namespace

TEST(File, ReadRefusesCharacterDevicesWithoutOpeningThem) {
  for (const char* device : {"/dev/null", "/dev/zero"}) {
    auto text = util::read_file(device);
    ASSERT_FALSE(text.ok()) << device;
    EXPECT_EQ(text.error().kind, util::ErrorKind::invalid);
    EXPECT_NE(text.error().message.find("not a regular file (a character device)"), std::string::npos) << text.error().message;
  }
  // A link to a device is the device.
  char name[] = "/tmp/nvte-devlink-XXXXXX";
  ASSERT_NE(::mkdtemp(name), nullptr);
  fs::path dir = name;
  fs::create_symlink("/dev/null", dir / "report.json");
  auto linked = util::read_file(dir / "report.json");
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message.find("a character device"), std::string::npos) << linked.error().message;
  fs::remove_all(dir);
}

// A terminal is what hung `fleet` and `run`: a read of a pty's slave waits for input for ever.
TEST(File, ReadOfATerminalIsRefusedAtOnce) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  std::string slave = ::ptsname(master);
  auto outcome = util::run_function([&](int) { return util::read_file(slave).ok() ? 1 : 0; }, std::chrono::seconds(5));
  ::close(master);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->timed_out) << "reading " << slave << " blocked";
  EXPECT_EQ(outcome->exit_code.value_or(-1), 0);
}

TEST_F(Tree, AbsoluteLinksAreReadInsideTheTree) {
  link("/etc/os-release", secret().string()); // an absolute path of the node
  link("/etc/hostname", "/usr/lib/os-release");
  for (auto resolver : k_resolvers) {
    util::ErrorKind kind{};
    EXPECT_EQ(read_in(tree(), "/etc/os-release", resolver, &kind), "<error>");
    EXPECT_EQ(kind, util::ErrorKind::not_found);
    EXPECT_EQ(read_in(tree(), "/etc/hostname", resolver), "PRETTY_NAME=\"the image's own\"\n");
  }
  // What the plain reader does with the same link: the node's file.
  EXPECT_EQ(util::read_file(tree() / "etc/os-release").value_or(""), "PRETTY_NAME=\"NODE SECRET\"\n");
}

TEST_F(Tree, DotDotNeverLeavesTheTree) {
  link("/etc/os-release", "../../../../../../../../../../" + secret().relative_path().string());
  link("/etc/dir", "../..");
  for (auto resolver : k_resolvers) {
    EXPECT_EQ(read_in(tree(), "/etc/os-release", resolver), "<error>");
    EXPECT_EQ(read_in(tree(), "/../../../usr/lib/os-release", resolver), "PRETTY_NAME=\"the image's own\"\n");
    EXPECT_EQ(read_in(tree(), "/etc/dir/usr/lib/os-release", resolver), "PRETTY_NAME=\"the image's own\"\n");
  }
}

TEST_F(Tree, RelativeLinksChainsAndLoops) {
  link("/etc/os-release", "../usr/lib/os-release");
  link("/a", "b");
  link("/b", "a");
  link("/usr/lib64", "lib");
  for (auto resolver : k_resolvers) {
    EXPECT_EQ(read_in(tree(), "/etc/os-release", resolver), "PRETTY_NAME=\"the image's own\"\n");
    EXPECT_EQ(read_in(tree(), "/usr/lib64/os-release", resolver), "PRETTY_NAME=\"the image's own\"\n");
    util::ErrorKind kind{};
    std::string message;
    EXPECT_EQ(read_in(tree(), "/a", resolver, &kind, &message), "<error>");
    EXPECT_NE(message.find(tree().string()), std::string::npos) << message;
  }
}

TEST_F(Tree, MagicLinksAreNotFollowed) {
  // /proc/self/fd/N of the machine, named from inside the tree: re-rooted, so nothing there.
  link("/etc/os-release", "/proc/self/fd/0");
  link("/etc/exe", "/proc/self/exe");
  for (auto resolver : k_resolvers) {
    EXPECT_EQ(read_in(tree(), "/etc/os-release", resolver), "<error>");
    EXPECT_EQ(read_in(tree(), "/etc/exe", resolver), "<error>");
  }
}

TEST_F(Tree, OnlyRegularFilesAreOpened) {
  ASSERT_EQ(::mkfifo((tree() / "etc/fifo").c_str(), 0644), 0);
  link("/etc/kmsg", "/dev/kmsg"); // re-rooted: the tree has no /dev/kmsg
  for (auto resolver : k_resolvers) {
    auto outcome = util::run_function(
        [&](int) {
          auto fd = util::open_file_in_root(tree(), "/etc/fifo", resolver);
          return !fd && fd.error().message.find("not a regular file (a FIFO)") != std::string::npos ? 0 : 1;
        },
        std::chrono::seconds(5));
    ASSERT_TRUE(outcome.ok());
    EXPECT_FALSE(outcome->timed_out);
    EXPECT_EQ(outcome->exit_code.value_or(-1), 0);
    EXPECT_EQ(read_in(tree(), "/etc/kmsg", resolver), "<error>");
    std::string message;
    EXPECT_EQ(read_in(tree(), "/etc", resolver, nullptr, &message), "<error>");
    EXPECT_NE(message.find("a directory"), std::string::npos) << message;
  }
  if (::geteuid() != 0) GTEST_SKIP() << "a device node in the tree needs root (mknod)";
  // A crafted layer's own device node (/dev/null's numbers): refused, never opened.
  ASSERT_EQ(::mknod((tree() / "etc/hostname").c_str(), S_IFCHR | 0644, makedev(1, 3)), 0);
  for (auto resolver : k_resolvers) {
    std::string message;
    EXPECT_EQ(read_in(tree(), "/etc/hostname", resolver, nullptr, &message), "<error>");
    EXPECT_NE(message.find("not a regular file (a character device)"), std::string::npos) << message;
  }
}

TEST_F(Tree, LiveRootReadsAsTheSystemDoes) {
  auto text = util::read_file_in_root("/", (tree() / "usr/lib/os-release").string());
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "PRETTY_NAME=\"the image's own\"\n");
  auto head = util::read_file_head_in_root(tree(), "/usr/lib/os-release", 6);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(*head, "PRETTY");
  auto over = util::read_file_in_root(tree(), "/usr/lib/os-release", 6);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("larger than 6 bytes"), std::string::npos);
}
