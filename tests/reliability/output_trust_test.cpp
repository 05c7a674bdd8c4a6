// Another user's files in the doctor's way, through the real binary: the reproducers of the
// reliability audit of 2026-12-01 (items 4, 5, 6 and 10) that need a second user. Each makes
// uid 65534's directories and symlinks with chown/lchown (as `setpriv --reuid=65534 ln -s` would)
// and therefore runs only as root, as CI does; otherwise it is skipped. The unprivileged
// reproducers are CLI cases in tests/cli/cases/outputs_trust.yaml.
#include "doctor_runner.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using reliability::run_doctor;
using reliability::TempDir;
using testing::HasSubstr;

namespace {

constexpr uid_t k_other = 65534;
using reliability::k_rules;
using reliability::k_snapshot;

class OtherUser : public testing::Test {
protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: another user's files are made with chown (CI runs as root)";
    fs::permissions(m_dir.path(),
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  }
  // A directory that belongs to uid 65534 (mode 0755, as node_exporter's textfile directory).
  fs::path their_directory(const std::string& name) {
    fs::path dir = m_dir / name;
    fs::create_directories(dir);
    EXPECT_EQ(::chown(dir.c_str(), k_other, k_other), 0);
    return dir;
  }
  // A symlink that belongs to uid 65534.
  void their_link(const fs::path& target, const fs::path& link) {
    fs::create_symlink(target, link);
    EXPECT_EQ(::lchown(link.c_str(), k_other, k_other), 0);
  }
  void write(const fs::path& path, const std::string& text) { ASSERT_TRUE(util::write_file_atomic(path, text).ok()) << path; }
  std::string read(const fs::path& path) { return util::read_file(path).value_or("<unreadable>"); }

  TempDir m_dir{"trust"};
};

// Item 4: `run` replaced the file a link in node_exporter's directory named, whoever planted it.
TEST_F(OtherUser, RunDoesNotFollowTheirLinkInTheirDirectoryAndWritesTheRest) {
  fs::create_directories(m_dir / "st");
  fs::permissions(m_dir / "st", fs::perms::owner_all);
  auto textfile = their_directory("textfile");
  write(m_dir / "victim", "precious\n");
  their_link(m_dir / "victim", textfile / "nvte_doctor.prom");
  write(m_dir / "c.yaml", "state_dir: " + (m_dir / "st").string() + "\nrules: [" + k_rules +
                              "]\nselftest:\n  policy: never\noutputs:\n  prometheus: " + (textfile / "nvte_doctor.prom").string() +
                              "\n  nfd: " + (m_dir / "features").string() + "\n");
  auto run = run_doctor({"run", "--config", (m_dir / "c.yaml").string(), "--facts", k_snapshot, "--force"});
  EXPECT_EQ(run.exit_code, 1) << reliability::context(run); // the verdict: a warning, not UNKNOWN
  EXPECT_EQ(read(m_dir / "victim"), "precious\n");
  EXPECT_THAT(run.err, HasSubstr("refusing to follow symlink " + (textfile / "nvte_doctor.prom").string() + ": it belongs to uid 65534"))
      << reliability::context(run);
  EXPECT_TRUE(fs::is_symlink(textfile / "nvte_doctor.prom"));
  EXPECT_TRUE(fs::exists(m_dir / "st" / "report.json")) << "the other outputs are still written";
  EXPECT_TRUE(fs::exists(m_dir / "features"));

  // A missing directory of an output is not made through their link either.
  fs::create_directories(m_dir / "elsewhere");
  their_link(m_dir / "elsewhere", textfile / "up");
  write(m_dir / "c.yaml", "state_dir: " + (m_dir / "st").string() + "\nrules: [" + k_rules +
                              "]\nselftest:\n  policy: never\noutputs:\n  nfd: " + (textfile / "up" / "sub" / "features").string() + "\n");
  run = run_doctor({"run", "--config", (m_dir / "c.yaml").string(), "--facts", k_snapshot, "--force"});
  EXPECT_EQ(run.exit_code, 1) << reliability::context(run);
  EXPECT_THAT(run.err, HasSubstr("refusing to follow symlink " + (textfile / "up").string())) << reliability::context(run);
  EXPECT_FALSE(fs::exists(m_dir / "elsewhere" / "sub"));
}

// Item 4 for -o and --termination-log: `check --termination-log` wrote its verdict into their target.
TEST_F(OtherUser, OutputAndTerminationLogRefuseTheirLink) {
  auto textfile = their_directory("textfile");
  write(m_dir / "victim", "precious\n");
  their_link(m_dir / "victim", textfile / "termination-log");
  auto out = run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "-o", (textfile / "termination-log").string()});
  EXPECT_EQ(out.exit_code, 3) << reliability::context(out);
  EXPECT_THAT(out.err, HasSubstr("it belongs to uid 65534 and its directory " + textfile.string() + " can be written by others"));
  auto log = run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "--termination-log", (textfile / "termination-log").string()});
  EXPECT_EQ(log.exit_code, 1) << reliability::context(log);
  EXPECT_THAT(log.err, HasSubstr("warning: --termination-log: refusing to follow symlink")) << reliability::context(log);
  EXPECT_EQ(read(m_dir / "victim"), "precious\n");
  // A link in a directory on the way counts as well.
  their_link(m_dir.path(), textfile / "up");
  auto through = run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "-o", (textfile / "up" / "victim").string()});
  EXPECT_EQ(through.exit_code, 3) << reliability::context(through);
  EXPECT_THAT(through.err, HasSubstr("refusing to follow symlink " + (textfile / "up").string()));
  EXPECT_EQ(read(m_dir / "victim"), "precious\n");
}

// The links that stay usable: an admin's (root's) link in their directory, and their link in a
// directory only root can change (they could not have planted it there).
TEST_F(OtherUser, TrustedLinksAreStillFollowed) {
  auto textfile = their_directory("textfile");
  fs::create_directories(m_dir / "real");
  write(m_dir / "real" / "doctor.prom", "old\n");
  fs::create_symlink(m_dir / "real" / "doctor.prom", textfile / "admins.prom");
  auto run =
      run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "--format", "prometheus", "-o", (textfile / "admins.prom").string()});
  EXPECT_EQ(run.exit_code, 1) << reliability::context(run);
  EXPECT_THAT(read(m_dir / "real" / "doctor.prom"), HasSubstr("nvte_doctor_info"));
  EXPECT_TRUE(fs::is_symlink(textfile / "admins.prom"));
  fs::create_directories(m_dir / "roots");
  their_link(m_dir / "real" / "doctor.prom", m_dir / "roots" / "theirs.prom");
  auto theirs = run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "-o", (m_dir / "roots" / "theirs.prom").string()});
  EXPECT_EQ(theirs.exit_code, 1) << reliability::context(theirs);
  EXPECT_THAT(read(m_dir / "real" / "doctor.prom"), HasSubstr("nvte-doctor"));
}

// Item 5: a state_dir that is their link (in their directory) to a private directory of root's was
// accepted, so they chose where root's report, state and lock went.
TEST_F(OtherUser, StateDirectoryReachedThroughTheirLinkOrDirectoryIsRefused) {
  auto theirs = their_directory("theirs");
  fs::create_directories(m_dir / "root-private");
  fs::permissions(m_dir / "root-private", fs::perms::owner_all);
  write(m_dir / "root-private" / "report.json", "root's file\n");
  their_link(m_dir / "root-private", theirs / "state");
  write(m_dir / "c.yaml", "state_dir: " + (theirs / "state").string() + "\nrules: [" + k_rules + "]\nselftest:\n  policy: never\n");
  auto run = run_doctor({"run", "--config", (m_dir / "c.yaml").string(), "--facts", k_snapshot, "--force"});
  EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
  EXPECT_THAT(run.err, HasSubstr("its component " + theirs.string() + " belongs to uid 65534")) << reliability::context(run);
  EXPECT_EQ(read(m_dir / "root-private" / "report.json"), "root's file\n");
  EXPECT_FALSE(fs::exists(m_dir / "root-private" / "run.lock"));
  // Their link in root's directory is refused too (a state directory is never reached through
  // another user's link), and so is a real directory inside theirs.
  their_link(m_dir / "root-private", m_dir / "state-link");
  write(m_dir / "c.yaml", "state_dir: " + (m_dir / "state-link").string() + "\nselftest:\n  policy: never\n");
  run = run_doctor({"run", "--config", (m_dir / "c.yaml").string(), "--facts", k_snapshot, "--rules", k_rules});
  EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
  EXPECT_THAT(run.err, HasSubstr("refusing to follow symlink " + (m_dir / "state-link").string() + ": it belongs to uid 65534"));
  fs::create_directories(theirs / "real-state");
  fs::permissions(theirs / "real-state", fs::perms::owner_all);
  auto update = run_doctor({"rules", "update", "http://127.0.0.1:9/r.bundle", "--state-dir", (theirs / "real-state").string(),
                            "--public-key", (m_dir / "none.pub").string()});
  EXPECT_EQ(update.exit_code, 3) << reliability::context(update);
  EXPECT_THAT(update.err, HasSubstr("its component " + theirs.string() + " belongs to uid 65534"));
}

// Item 6: a configuration that belongs to another user was used silently.
TEST_F(OtherUser, ConfigOrDirectoriesOfAnotherUserAreRefused) {
  fs::create_directories(m_dir / "st");
  fs::permissions(m_dir / "st", fs::perms::owner_all);
  write(m_dir / "c.yaml", "state_dir: " + (m_dir / "st").string() + "\nrules: [" + k_rules + "]\nselftest:\n  policy: never\n");
  ASSERT_EQ(::chown((m_dir / "c.yaml").c_str(), k_other, k_other), 0);
  auto run = run_doctor({"run", "--config", (m_dir / "c.yaml").string(), "--facts", k_snapshot, "--force"});
  EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
  EXPECT_THAT(run.err, HasSubstr("refusing config file " + (m_dir / "c.yaml").string() + ": it belongs to uid 65534"));
  EXPECT_FALSE(fs::exists(m_dir / "st" / "report.json"));

  auto workloads = their_directory("workloads");
  write(m_dir / "c2.yaml", "state_dir: " + (m_dir / "st").string() + "\nworkloads_dir: " + workloads.string() + "\n");
  run = run_doctor({"check", "--config", (m_dir / "c2.yaml").string(), "--facts", k_snapshot, "--rules", k_rules});
  EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
  EXPECT_THAT(run.err, HasSubstr("refusing workloads_dir " + workloads.string() + ": it belongs to uid 65534"));
}

// Item 10: --termination-log wrote the verdict over the first sector of a block device; -o refused it.
TEST_F(OtherUser, TerminationLogRefusesABlockDevice) {
  const fs::path image = m_dir / "disk.img";
  write(image, std::string(1u << 20, '\0'));
  auto attached = util::run_command({"losetup", "-f", "--show", image.string()}, {});
  if (!attached || attached->exit_code.value_or(1) != 0) GTEST_SKIP() << "no loop device here";
  const std::string loop(util::trim(attached->out));
  struct Detach {
    std::string device;
    ~Detach() { (void)util::run_command({"losetup", "-d", device}, {}); }
  } detach{loop};
  auto run = run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "--termination-log", loop});
  EXPECT_EQ(run.exit_code, 1) << reliability::context(run);
  EXPECT_THAT(run.err, HasSubstr("--termination-log: refusing to write to " + loop + ": it is a block device"));
  EXPECT_EQ(read(image), std::string(1u << 20, '\0')) << "the device was written";
  // Through a link too (root's, so followed as far as the device).
  fs::create_symlink(loop, m_dir / "log-link");
  run = run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "--termination-log", (m_dir / "log-link").string()});
  EXPECT_THAT(run.err, HasSubstr("it links to a block device"));
  EXPECT_EQ(read(image), std::string(1u << 20, '\0'));
}

} // namespace
