// The rule for untrusted trees through the real binary (issue 37; audit 2026-12-01 items 1, 2, 3
// and 7): nothing of a job's image or of a data file is loaded or run, image files are read inside
// the image, a terminal is never read, and an installed binary never runs a script from its build
// machine's checkout. Each test is the audit's reproducer; a marker file says whether foreign code
// ran. The root-only reproducers (another user's files) are in root_untrusted.sh.
#include "doctor_runner.hpp"
#include "util/file.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;
using reliability::run_doctor;
using reliability::TempDir;

namespace {

const std::string k_fixtures = std::string(NVTE_TESTS_DIR) + "/fixtures";
const std::string k_h100 = k_fixtures + "/snapshots/h100-node.json";
using reliability::k_rules;

// The fixture image (an umoci bundle: rootfs/ and config.json) copied to dir/img.
fs::path copy_image(const fs::path& dir) {
  fs::copy(k_fixtures + "/image-te", dir / "img", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  return dir / "img";
}

void write_executable(const fs::path& file, const std::string& text) { ASSERT_TRUE(util::write_file_atomic(file, text, 0755).ok()); }

// A snapshot that names interpreter as its Python, like one attached to a bug report.
fs::path snapshot_naming(const fs::path& dir, const std::string& interpreter) {
  json doc = json::parse(util::read_file(k_h100).value());
  doc["facts"]["python"]["executable"] = interpreter;
  fs::path out = dir / "snap.json";
  EXPECT_TRUE(util::write_file_atomic(out, doc.dump()).ok());
  return out;
}

std::string reason_of(const std::string& report) {
  json doc = json::parse(report, nullptr, false);
  if (doc.is_discarded() || !doc.contains("facts")) return {};
  const json& facts = doc["facts"];
  if (!facts.contains("probe") || !facts["probe"].contains("libraries") || !facts["probe"]["libraries"].contains("reason")) return {};
  return facts["probe"]["libraries"]["reason"].get<std::string>();
}

// A terminal the test owns: reading its slave side blocks until someone types.
struct Terminal {
  Terminal() {
    master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return;
    slave = ::ptsname(master);
  }
  ~Terminal() {
    if (master >= 0) ::close(master);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  int master = -1;
  std::string slave;
};

} // namespace

// Item 1: check / probe / explain --root IMAGE never load a file of the image, even in a child.
TEST(UntrustedTrees, APreflightNeverLoadsALibraryOfTheImage) {
  TempDir dir("preflight-load");
  fs::path img = copy_image(dir.path());
  fs::create_directories(img / "rootfs/usr/lib/x86_64-linux-gnu");
  fs::copy_file(FAKE_CUDNN_MARKER, img / "rootfs/usr/lib/x86_64-linux-gnu/libcudnn.so.9");
  const fs::path marker = dir / "IMAGE_CODE_RAN";
  const std::map<std::string, std::string> env = {{"NVTE_TEST_LOAD_MARKER", marker.string()}};
  const std::string root = (img / "rootfs").string();
  auto check =
      run_doctor({"check", "--root", root, "--node-facts", k_h100, "--image", "evil:1", "--rules", k_rules, "--format", "json"}, env);
  EXPECT_FALSE(fs::exists(marker)) << "the image's library ran in the doctor: " << util::read_file(marker).value_or("")
                                   << reliability::context(check);
  EXPECT_LE(check.exit_code, 2) << reliability::context(check);
  EXPECT_NE(reason_of(check.out).find("/usr/lib/x86_64-linux-gnu/libcudnn.so.9: version unknown without loading it"), std::string::npos)
      << reason_of(check.out);
  auto probe = run_doctor({"probe", "--root", root, "--node-facts", k_h100, "--format", "json"}, env);
  auto explain = run_doctor({"explain", "--root", root, "--node-facts", k_h100, "--rules", k_rules}, env);
  auto node_root = run_doctor({"probe", "--root", root, "--node-root", root, "--format", "json"}, env);
  auto plain = run_doctor({"probe", "--root", root, "--format", "json"}, env); // a saved tree, no preflight
  EXPECT_FALSE(fs::exists(marker)) << reliability::context(probe) << reliability::context(explain) << reliability::context(node_root)
                                   << reliability::context(plain);
}

// Item 1, its second half: a directory that only the image's LD_LIBRARY_PATH names, at "/".
TEST(UntrustedTrees, ADirectoryOnlyTheImagesEnvironmentNamesIsNotLoadedFrom) {
  TempDir dir("image-env-load");
  fs::create_directories(dir / "lib");
  fs::copy_file(FAKE_CUDNN_MARKER, dir / "lib/libcudnn.so.9");
  const fs::path marker = dir / "IMAGE_CODE_RAN";
  json config = {{"config", {{"Env", {"PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=" + (dir / "lib").string()}}}}};
  ASSERT_TRUE(util::write_file_atomic(dir / "image-config.json", config.dump()).ok());
  auto run = run_doctor({"check", "--root", "/", "--image-config", (dir / "image-config.json").string(), "--node-facts", k_h100, "--rules",
                         k_rules, "--format", "json"},
                        {{"NVTE_TEST_LOAD_MARKER", marker.string()}});
  EXPECT_FALSE(fs::exists(marker)) << reliability::context(run);
  EXPECT_LE(run.exit_code, 2) << reliability::context(run);
  EXPECT_NE(reason_of(run.out).find((dir / "lib/libcudnn.so.9").string() + ": version unknown without loading it (the image's environment"),
            std::string::npos)
      << reason_of(run.out);
}

// Item 2: selftest and check --selftest never run python.executable of a --facts snapshot; the
// Python tier is skipped with a note, in text and JSON.
TEST(UntrustedTrees, TheSelfTestNeverRunsAnInterpreterASnapshotNames) {
  TempDir dir("snapshot-python");
  const fs::path ran = dir / "RAN";
  write_executable(dir / "python3", "#!/bin/sh\nid > '" + ran.string() + "'\necho '{\"status\": \"ok\"}'\n");
  fs::path snap = snapshot_naming(dir.path(), (dir / "python3").string());
  auto text = run_doctor({"selftest", "--facts", snap.string(), "--rules", k_rules, "--timeout", "10", "-v", "--no-color"});
  auto as_json = run_doctor({"selftest", "--facts", snap.string(), "--rules", k_rules, "--timeout", "10", "--format", "json"});
  auto check = run_doctor({"check", "--selftest", "--facts", snap.string(), "--rules", k_rules, "--timeout", "10", "--format", "json"});
  EXPECT_FALSE(fs::exists(ran)) << "the snapshot's interpreter ran" << reliability::context(text) << reliability::context(check);
  for (const auto* run : {&text, &as_json, &check}) {
    EXPECT_NE(run->out.find("pass --python to run the Python tier"), std::string::npos) << reliability::context(*run);
    EXPECT_EQ(run->err.find("pass --python"), std::string::npos);
  }
  json doc = json::parse(as_json.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << reliability::context(as_json);
  bool skipped = false;
  for (const auto& c : doc["selftest"]["checks"]) skipped = skipped || (c["check"] == "python" && c["status"] == "skipped");
  EXPECT_TRUE(skipped) << as_json.out;
  // --python on the command line is the operator's word: it runs.
  auto given =
      run_doctor({"selftest", "--facts", snap.string(), "--rules", k_rules, "--timeout", "10", "--python", (dir / "python3").string()},
                 {{"NVTE_DOCTOR_SELFTEST_PY", (dir / "python3").string()}});
  EXPECT_TRUE(fs::exists(ran)) << reliability::context(given);
}

// Item 2, the image's venv: a path inside the image that names another user's file on the node.
TEST(UntrustedTrees, TheSelfTestNeverRunsAnInterpreterOfAnImage) {
  TempDir dir("image-python");
  fs::permissions(dir.path(),
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::path img = copy_image(dir.path());
  const fs::path root = img / "rootfs";
  const fs::path venv = dir / "venv";
  const fs::path in_image = root / venv.relative_path();
  fs::create_directories(in_image / "bin");
  fs::create_directories(in_image / "lib/python3.12");
  fs::copy(root / "usr/local/lib/python3.12/dist-packages", in_image / "lib/python3.12/site-packages",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  ASSERT_TRUE(util::write_file_atomic(in_image / "pyvenv.cfg", "home = /usr/bin\nversion = 3.12.3\n").ok());
  fs::create_symlink("/usr/bin/python3", in_image / "bin/python3");
  fs::create_directories(venv / "bin");
  const fs::path ran = dir / "RAN";
  write_executable(venv / "bin/python3", "#!/bin/sh\nid > '" + ran.string() + "'\n");
  json config = {{"config", {{"Env", {"PATH=" + (venv / "bin").string() + ":/usr/bin:/bin", "VIRTUAL_ENV=" + venv.string()}}}}};
  ASSERT_TRUE(util::write_file_atomic(dir / "image-config.json", config.dump()).ok());
  auto run = run_doctor({"check", "--root", root.string(), "--image-config", (dir / "image-config.json").string(), "--node-facts", k_h100,
                         "--rules", k_rules, "--selftest", "--timeout", "10", "--format", "json"});
  EXPECT_FALSE(fs::exists(ran)) << "the image's interpreter path ran on the node" << reliability::context(run);
  EXPECT_NE(run.out.find("pass --python to run the Python tier"), std::string::npos) << reliability::context(run);
}

// Item 3: the image's /etc/os-release and /etc/hostname that link to files of the node.
TEST(UntrustedTrees, ImageFilesThatLinkToTheNodeAreReadInTheImage) {
  TempDir dir("image-links");
  fs::path img = copy_image(dir.path());
  const fs::path root = img / "rootfs";
  ASSERT_TRUE(util::write_file_atomic(dir / "node-file", "PRETTY_NAME=\"NODE SECRET\"\nID=nodesecret\n").ok());
  ASSERT_TRUE(util::write_file_atomic(dir / "shadow-standin", "root:$6$HASH$abc:19000:0:99999:7:::\n").ok());
  fs::remove(root / "etc/os-release");
  fs::create_symlink(dir / "node-file", root / "etc/os-release");
  fs::remove(root / "etc/hostname");
  fs::create_symlink(dir / "shadow-standin", root / "etc/hostname");
  auto probe = run_doctor({"probe", "--root", root.string(), "--node-facts", k_h100, "--format", "json"});
  EXPECT_EQ(probe.exit_code, 0) << reliability::context(probe);
  EXPECT_EQ(probe.out.find("SECRET"), std::string::npos) << "the node's file is in the report" << reliability::context(probe);
  auto check = run_doctor({"check", "--root", root.string(), "--rules", k_rules, "--no-color"});
  EXPECT_EQ(check.out.find("HASH"), std::string::npos) << "a file of the node named the host" << reliability::context(check);
}

// Item 3: `fleet` on a report name that links to a terminal, and `run` with a push.token_file
// that is one, finish at once instead of reading it for ever.
TEST(UntrustedTrees, FleetAndPushNeverReadATerminal) {
  Terminal tty;
  ASSERT_FALSE(tty.slave.empty());
  TempDir dir("terminal");
  fs::create_directories(dir / "r");
  auto report = run_doctor({"check", "--facts", k_h100, "--rules", k_rules, "--format", "json"});
  ASSERT_TRUE(util::write_file_atomic(dir / "r/a.json", report.out).ok());
  fs::create_symlink(tty.slave, dir / "r/b.json");
  auto fleet = run_doctor({"fleet", "--max-age", "100000d", (dir / "r").string()}, {}, std::chrono::seconds(20));
  EXPECT_FALSE(fleet.timed_out) << "fleet read a terminal" << reliability::context(fleet);
  EXPECT_NE((fleet.out + fleet.err).find("not a regular file (a character device)"), std::string::npos) << reliability::context(fleet);

  ASSERT_EQ(::chmod(tty.slave.c_str(), 0600), 0); // the token file's own mode check passes
  fs::create_directories(dir / "st");
  fs::permissions(dir / "st", fs::perms::owner_all);
  ASSERT_TRUE(util::write_file_atomic(dir / "c.yaml", "state_dir: " + (dir / "st").string() + "\nrules: [" + k_rules +
                                                          "]\nselftest:\n  policy: never\npush:\n  url: http://127.0.0.1:9/nvte\n"
                                                          "  token_file: " +
                                                          tty.slave + "\n  retries: 0\n")
                  .ok());
  auto run = run_doctor({"run", "--config", (dir / "c.yaml").string(), "--facts", k_h100, "--force"}, {}, std::chrono::seconds(20));
  EXPECT_FALSE(run.timed_out) << "run read a terminal as its push token" << reliability::context(run);
  EXPECT_NE(run.err.find("not a regular file (a character device)"), std::string::npos) << reliability::context(run);
}

// Item 7: a binary outside its build tree (a bundle, an install) never falls back to the source
// tree's selftest.py; without a script of its own the Python tier is skipped with a note.
TEST(UntrustedTrees, ACopiedBinaryNeverRunsTheBuildMachinesScript) {
  TempDir dir("bundle-script");
  fs::create_directories(dir / "b/bin");
  fs::create_directories(dir / "b/share/nvte-doctor");
  fs::copy_file(NVTE_BINARY, dir / "b/bin/nvte-doctor");
  fs::permissions(dir / "b/bin/nvte-doctor", fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  const fs::path argv = dir / "argv";
  write_executable(dir / "py", "#!/bin/sh\necho \"script: $1\" > '" + argv.string() + "'\necho '{\"status\": \"ok\"}'\n");
  auto run = [&] {
    return run_doctor(
        {"selftest", "--facts", k_h100, "--rules", k_rules, "--python", (dir / "py").string(), "--timeout", "10", "-v", "--no-color"}, {},
        std::chrono::seconds(60), (dir / "b/bin/nvte-doctor").string());
  };
  auto without = run();
  const std::string source_script = std::string(NVTE_SOURCE_DIR) + "/src/selftest/selftest.py";
  EXPECT_EQ(util::read_file(argv).value_or("").find(source_script), std::string::npos) << reliability::context(without);
  if (!fs::exists(argv)) {
    EXPECT_NE(without.out.find("no selftest.py"), std::string::npos) << reliability::context(without);
  }
  fs::remove(argv);
  ASSERT_TRUE(util::write_file_atomic(dir / "b/share/nvte-doctor/selftest.py", "# the bundle's own\n").ok());
  auto with = run();
  EXPECT_EQ(util::read_file(argv).value_or(""), "script: " + (dir / "b/share/nvte-doctor/selftest.py").string() + "\n")
      << reliability::context(with);
}
