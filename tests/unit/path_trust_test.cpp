// The trusted walk (util/path_trust.hpp) and the output layer's policy on top of it: which
// symlinks an output follows, what a state directory's components may be, FIFOs without a reader
// and the kinds of file --termination-log (write_file_in_place) accepts. Reliability audit of
// 2026-12-01, items 4, 5, 10 and 13. The cases with another user's files need root (chown); they
// are skipped otherwise.
#include "util/file.hpp"
#include "util/path_trust.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

class PathTrust : public testing::Test {
protected:
  void SetUp() override {
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    fs::permissions(m_dir,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  static bool root() { return ::geteuid() == 0; }
  std::string read(const fs::path& p) { return util::read_file(p).value_or("<unreadable>"); }

  fs::path m_dir = fs::temp_directory_path() / ("nvte-trust-" + std::to_string(::getpid()));
};

// Runs body in a child with a deadline: a write that blocks is a timeout, not a hung test.
util::Result<util::ChildOutcome> within_seconds(int seconds, const std::function<int()>& body) {
  return util::run_function([&](int) { return body(); }, std::chrono::seconds(seconds));
}

TEST_F(PathTrust, AFifoWithoutAReaderIsAnErrorNotAWait) {
  const fs::path fifo = m_dir / "nfd";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (bool in_place : {false, true}) {
    auto outcome = within_seconds(10, [&] {
      auto written = in_place ? util::write_file_in_place(fifo, "x\n") : util::write_file_atomic(fifo, "x\n");
      if (written) return 0;
      return written.error().message == "cannot write to " + fifo.string() + ": it is a FIFO that no process is reading" ? 7 : 1;
    });
    ASSERT_TRUE(outcome.ok());
    EXPECT_FALSE(outcome->timed_out) << (in_place ? "write_file_in_place" : "write_file_atomic") << " waited for a reader";
    EXPECT_EQ(outcome->exit_code.value_or(-1), 7) << (in_place ? "write_file_in_place" : "write_file_atomic");
  }
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
}

// Item 10: write_file_in_place opened whatever was there with O_CREAT|O_TRUNC.
TEST_F(PathTrust, InPlaceWritesTakeTheOutputPolicyForKindsOfFile) {
  ASSERT_TRUE(util::write_file_atomic(m_dir / "log", "an older and longer message\n").ok());
  ASSERT_TRUE(util::write_file_in_place(m_dir / "log", "short\n").ok());
  EXPECT_EQ(read(m_dir / "log"), "short\n");
  ASSERT_TRUE(util::write_file_in_place(m_dir / "new", "made\n").ok());
  EXPECT_EQ(read(m_dir / "new"), "made\n");
  EXPECT_EQ(fs::status(m_dir / "new").permissions() & fs::perms::all, fs::perms(0644));
  fs::create_directories(m_dir / "dir");
  auto as_dir = util::write_file_in_place(m_dir / "dir", "x");
  ASSERT_FALSE(as_dir.ok());
  EXPECT_EQ(as_dir.error().message, "refusing to write to " + (m_dir / "dir").string() + ": it is a directory");
  fs::create_symlink(m_dir / "missing", m_dir / "dangling");
  auto dangling = util::write_file_in_place(m_dir / "dangling", "x");
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.error().message.find("symlink to a missing file"), std::string::npos) << dangling.error().message;
  EXPECT_FALSE(fs::exists(m_dir / "missing"));
  int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string sock_path = (m_dir / "sock").string();
  ASSERT_LT(sock_path.size(), sizeof address.sun_path);
  std::copy(sock_path.begin(), sock_path.end(), address.sun_path);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  auto as_socket = util::write_file_in_place(m_dir / "sock", "x");
  ::close(sock);
  ASSERT_FALSE(as_socket.ok());
  EXPECT_NE(as_socket.error().message.find("it is a socket"), std::string::npos) << as_socket.error().message;
  // /dev/null is written through and stays a device.
  ASSERT_TRUE(util::write_file_in_place("/dev/null", "x").ok());
}

TEST_F(PathTrust, OwnLinksAreFollowedAnywhere) {
  ASSERT_TRUE(util::write_file_atomic(m_dir / "target", "old\n").ok());
  fs::create_directories(m_dir / "open");
  fs::permissions(m_dir / "open", fs::perms::all); // 0777: others could plant links here...
  fs::create_symlink(m_dir / "target", m_dir / "open" / "mine");
  // ...but this one is the caller's own, as the kernel's protected_symlinks would also follow.
  ASSERT_TRUE(util::write_file_atomic(m_dir / "open" / "mine", "new\n").ok());
  EXPECT_EQ(read(m_dir / "target"), "new\n");
  EXPECT_TRUE(fs::is_symlink(m_dir / "open" / "mine"));
  // Relative links and ".." on the way resolve as the kernel would.
  fs::create_directories(m_dir / "a" / "b");
  fs::create_symlink("../../target", m_dir / "a" / "b" / "up");
  ASSERT_TRUE(util::write_file_atomic(m_dir / "a" / "b" / "up", "relative\n").ok());
  EXPECT_EQ(read(m_dir / "target"), "relative\n");
  ASSERT_TRUE(util::write_file_atomic(m_dir / "a" / ".." / "a" / "b" / ".." / "b" / "x", "dots\n").ok());
  EXPECT_EQ(read(m_dir / "a" / "b" / "x"), "dots\n");
  fs::create_symlink("loop", m_dir / "loop");
  auto looped = util::write_file_atomic(m_dir / "loop", "x");
  ASSERT_FALSE(looped.ok());
  EXPECT_NE(looped.error().message.find("Too many levels of symbolic links"), std::string::npos) << looped.error().message;
}

// Item 4: a link another user planted in a directory they can write is not followed, at the end
// of the path or on the way; the same link in a directory only root can change is.
TEST_F(PathTrust, AnotherUsersLinkIsFollowedOnlyWhereTheyCouldNotHavePlantedIt) {
  if (!root()) GTEST_SKIP() << "needs root (chown)";
  ASSERT_TRUE(util::write_file_atomic(m_dir / "victim", "precious\n").ok());
  fs::create_directories(m_dir / "theirs");
  ASSERT_EQ(::chown((m_dir / "theirs").c_str(), 65534, 65534), 0);
  auto their_link = [](const fs::path& target, const fs::path& link) {
    fs::create_symlink(target, link);
    ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  };
  their_link(m_dir / "victim", m_dir / "theirs" / "out.prom");
  auto refused = util::write_file_atomic(m_dir / "theirs" / "out.prom", "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, util::ErrorKind::permission);
  EXPECT_EQ(refused.error().message, "refusing to follow symlink " + (m_dir / "theirs" / "out.prom").string() +
                                         ": it belongs to uid 65534 and its directory " + (m_dir / "theirs").string() +
                                         " can be written by others (owner uid 65534, mode 0755); remove the link or write elsewhere");
  EXPECT_FALSE(util::write_file_in_place(m_dir / "theirs" / "out.prom", "x").ok());
  EXPECT_EQ(read(m_dir / "victim"), "precious\n");
  // On the way: theirs/dir -> m_dir, then /victim.
  their_link(m_dir, m_dir / "theirs" / "dir");
  EXPECT_FALSE(util::write_file_atomic(m_dir / "theirs" / "dir" / "victim", "x").ok());
  EXPECT_EQ(read(m_dir / "victim"), "precious\n");
  // A plain file in their directory is still written (rename does not follow links).
  ASSERT_TRUE(util::write_file_atomic(m_dir / "theirs" / "plain.prom", "ok\n").ok());
  // Root's link in their directory, and their link in root's 0755 directory, are followed.
  fs::create_symlink(m_dir / "victim", m_dir / "theirs" / "admins");
  ASSERT_TRUE(util::write_file_atomic(m_dir / "theirs" / "admins", "by root's link\n").ok());
  EXPECT_EQ(read(m_dir / "victim"), "by root's link\n");
  their_link(m_dir / "victim", m_dir / "their-link-in-roots-dir");
  ASSERT_TRUE(util::write_file_atomic(m_dir / "their-link-in-roots-dir", "kept\n").ok());
  EXPECT_EQ(read(m_dir / "victim"), "kept\n");
  // A world-writable sticky directory (/tmp): their link is refused, as protected_symlinks does.
  fs::create_directories(m_dir / "sticky");
  fs::permissions(m_dir / "sticky", fs::perms::all | fs::perms::sticky_bit);
  their_link(m_dir / "victim", m_dir / "sticky" / "link");
  EXPECT_FALSE(util::write_file_atomic(m_dir / "sticky" / "link", "x").ok());
  EXPECT_EQ(read(m_dir / "victim"), "kept\n");
}

// Item 5: only the last component of a state directory was checked.
TEST_F(PathTrust, PrivateDirectoryChecksEveryComponent) {
  fs::create_directories(m_dir / "open" / "state");
  fs::permissions(m_dir / "open" / "state", fs::perms::owner_all);
  fs::permissions(m_dir / "open", fs::perms::all);
  auto open = util::check_private_directory(m_dir / "open" / "state");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().message,
            "refusing directory " + (m_dir / "open" / "state").string() + ": its component " + (m_dir / "open").string() +
                " has mode 0777: other users can write to it and replace what follows it (chmod go-w " + (m_dir / "open").string() + ")");
  // A sticky directory on the way is fine (others cannot rename what is not theirs) ...
  fs::permissions(m_dir / "open", fs::perms::all | fs::perms::sticky_bit);
  EXPECT_TRUE(util::check_private_directory(m_dir / "open" / "state").ok());
  // ... but not as the directory itself.
  fs::permissions(m_dir / "open" / "state", fs::perms::all | fs::perms::sticky_bit);
  EXPECT_FALSE(util::check_private_directory(m_dir / "open" / "state").ok());
  fs::permissions(m_dir / "open" / "state", fs::perms::owner_all);
  // The caller's own link to a private directory is followed; a missing one is not_found.
  fs::create_symlink(m_dir / "open" / "state", m_dir / "link");
  EXPECT_TRUE(util::check_private_directory(m_dir / "link").ok());
  auto missing = util::check_private_directory(m_dir / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, util::ErrorKind::not_found);
  if (!root()) return;
  ASSERT_EQ(::chown((m_dir / "open").c_str(), 65534, 65534), 0);
  auto foreign = util::check_private_directory(m_dir / "open" / "state");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message.find("its component " + (m_dir / "open").string() + " belongs to uid 65534"), std::string::npos)
      << foreign.error().message;
}

TEST_F(PathTrust, TrustedPathNamesOwnerAndMode) {
  ASSERT_TRUE(util::write_file_atomic(m_dir / "c.yaml", "x: 1\n").ok());
  EXPECT_TRUE(util::check_trusted_path(m_dir / "c.yaml", "config file").ok());
  fs::permissions(m_dir / "c.yaml", fs::perms::group_write, fs::perm_options::add);
  auto group = util::check_trusted_path(m_dir / "c.yaml", "config file");
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.error().message, "refusing config file " + (m_dir / "c.yaml").string() +
                                       ": mode 0664 lets other users change it (chmod go-w " + (m_dir / "c.yaml").string() + ")");
  if (!root()) return;
  fs::permissions(m_dir / "c.yaml", fs::perms::group_write, fs::perm_options::remove);
  ASSERT_EQ(::chown((m_dir / "c.yaml").c_str(), 65534, 65534), 0);
  auto theirs = util::check_trusted_path(m_dir / "c.yaml", "config file");
  ASSERT_FALSE(theirs.ok());
  EXPECT_NE(theirs.error().message.find("it belongs to uid 65534, not to this user (uid 0) or root"), std::string::npos)
      << theirs.error().message;
}

} // namespace
