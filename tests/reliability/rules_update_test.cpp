// Signed rules updates end to end: the real binary makes keys and bundles (`rules keygen`,
// `rules sign`) and runs `rules update` against a loopback HTTP server (127.0.0.1, a thread of
// this test) that serves a good bundle, a tampered one, one signed by another key, a truncated
// file, a connection that closes mid-body, a 500, and a well-signed bundle whose rules do not
// lint. After each failure the previously active set must still be active and working.
#include "doctor_runner.hpp"
#include "service/bundle.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ctime>
#include <thread>

namespace fs = std::filesystem;
using reliability::k_rules;
using reliability::run_doctor;
using reliability::TempDir;

namespace {

// One response per path: the body, and how many bytes Content-Length claims (to cut a body short).
struct Response {
  int status = 200;
  std::string body;
  std::size_t claimed_length = 0;
};

class LoopbackServer {
public:
  explicit LoopbackServer(std::map<std::string, Response> responses) : m_responses(std::move(responses)) {
    m_listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    if (::bind(m_listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(m_listener, 8) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    socklen_t length = sizeof address;
    ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &length);
    m_port = ntohs(address.sin_port);
    m_thread = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    ::shutdown(m_listener, SHUT_RDWR);
    ::close(m_listener);
    m_thread.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(m_port) + path; }

private:
  void serve() {
    for (;;) {
      int client = ::accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      auto first_space = request.find(' ');
      std::string path = request.substr(first_space + 1, request.find(' ', first_space + 1) - first_space - 1);
      auto it = m_responses.find(path);
      Response response = it == m_responses.end() ? Response{404, "not found\n", 0} : it->second;
      std::size_t claimed = response.claimed_length ? response.claimed_length : response.body.size();
      std::string head = "HTTP/1.1 " + std::to_string(response.status) + " X\r\nContent-Length: " + std::to_string(claimed) +
                         "\r\nConnection: close\r\n\r\n";
      std::string all = head + response.body;
      (void)util::write_all(client, all);
      ::close(client);
    }
  }

  std::map<std::string, Response> m_responses;
  int m_listener = -1;
  int m_port = 0;
  std::thread m_thread;
};

class RulesUpdate : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(run_doctor({"rules", "keygen", (m_dir / "signer").string()}).exit_code, 0);
    ASSERT_EQ(run_doctor({"rules", "keygen", (m_dir / "stranger").string()}).exit_code, 0);
    auto signed_run = run_doctor(
        {"rules", "sign", k_rules, "--secret-key", (m_dir / "signer.key").string(), "--output", (m_dir / "good.bundle").string()});
    ASSERT_EQ(signed_run.exit_code, 0) << reliability::context(signed_run);
    m_good = *util::read_file(m_dir / "good.bundle");
  }

  reliability::DoctorRun update(const std::string& url, const std::string& key = "signer.pub") {
    return run_doctor({"rules", "update", url, "--public-key", (m_dir / key).string(), "--state-dir", m_state.string()});
  }
  reliability::DoctorRun list() { return run_doctor({"rules", "list", "--state-dir", m_state.string()}); }
  std::string active() const {
    std::error_code ec;
    return fs::read_symlink(m_state / "rules" / "current", ec).string();
  }

  TempDir m_dir{"update"};
  fs::path m_state = m_dir / "state";
  std::string m_good;
};

TEST_F(RulesUpdate, GoodBundleIsInstalledAndListed) {
  LoopbackServer server({{"/good.bundle", {200, m_good, 0}}});
  auto run = update(server.url("/good.bundle"));
  ASSERT_EQ(run.exit_code, 0) << reliability::context(run);
  EXPECT_NE(active(), "");
  auto listed = list();
  ASSERT_EQ(listed.exit_code, 0) << reliability::context(listed);
  EXPECT_NE(listed.out.find("source: bundle "), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("from " + server.url("/good.bundle")), std::string::npos) << listed.out;
  // The same digest as the source tree: the bundle carries the files byte for byte.
  auto shipped = run_doctor({"rules", "list", "--rules", k_rules});
  EXPECT_EQ(shipped.out.substr(0, shipped.out.find("source:")), listed.out.substr(0, listed.out.find("source:")));
  // check uses the installed bundle.
  auto check = run_doctor({"check", "--state-dir", m_state.string(), "--facts",
                           std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json"});
  EXPECT_LE(check.exit_code, 2) << reliability::context(check);
  // Installing it again is a no-op.
  auto again = update(server.url("/good.bundle"));
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find("already active"), std::string::npos) << again.out;
}

TEST_F(RulesUpdate, EveryBadDownloadLeavesTheOldSetActive) {
  std::string tampered = m_good;
  auto at = tampered.find("severity: warning");
  ASSERT_NE(at, std::string::npos);
  tampered.replace(at, 17, "severity: error  "); // same length: only the signature can tell

  // Well signed, but its rules do not lint (a rule without references or tests).
  auto secret = service::decode_key(*util::read_file(m_dir / "signer.key"), 64, "signer.key");
  ASSERT_TRUE(secret.ok());
  std::vector<service::BundleFile> files = {{"bad.yaml", "rules:\n  - id: lonely\n    title: t\n    severity: info\n    when: has(driver.version)\n    message: m\n"}};
  auto unlinted = service::pack_bundle(files, *secret, {std::uint64_t(std::time(nullptr)) + 100, std::time(nullptr)});
  ASSERT_TRUE(unlinted.ok());

  LoopbackServer server({{"/good.bundle", {200, m_good, 0}},
                         {"/tampered.bundle", {200, tampered, 0}},
                         {"/truncated.bundle", {200, m_good.substr(0, m_good.size() / 2), 0}},
                         {"/cut.bundle", {200, m_good.substr(0, m_good.size() / 3), m_good.size()}},
                         {"/error.bundle", {500, "internal error\n", 0}},
                         {"/unlinted.bundle", {200, *unlinted, 0}}});
  ASSERT_EQ(update(server.url("/good.bundle")).exit_code, 0);
  const std::string before = active();
  const std::string listed_before = list().out;

  struct Bad {
    std::string path;
    std::string key;
    std::string reason;
  };
  for (const Bad& bad : {Bad{"/tampered.bundle", "signer.pub", "does not verify"},
                         Bad{"/good.bundle", "stranger.pub", "does not verify"},
                         Bad{"/truncated.bundle", "signer.pub", "truncated"},
                         Bad{"/cut.bundle", "signer.pub", "cannot download"},
                         Bad{"/error.bundle", "signer.pub", "500"},
                         Bad{"/missing.bundle", "signer.pub", "404"},
                         Bad{"/unlinted.bundle", "signer.pub", "does not lint"}}) {
    SCOPED_TRACE(bad.path + " with " + bad.key);
    auto run = update(server.url(bad.path), bad.key);
    EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << reliability::context(run);
    EXPECT_NE(run.err.find(bad.reason), std::string::npos) << reliability::context(run);
    EXPECT_EQ(active(), before);
    EXPECT_EQ(list().out, listed_before);
    // No half-unpacked bundle is left beside the good one.
    std::size_t entries = 0;
    for (const auto& entry : fs::directory_iterator(m_state / "rules" / "bundles")) {
      (void)entry;
      ++entries;
    }
    EXPECT_EQ(entries, 1u);
  }
}

TEST_F(RulesUpdate, RefusesPlainHttpToOtherHosts) {
  auto run = update("http://192.0.2.1/rules.bundle");
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_NE(run.err.find("https"), std::string::npos) << run.err;
}

TEST_F(RulesUpdate, SignRefusesRulesThatDoNotLintAndKeysArePrivate) {
  fs::create_directories(m_dir / "bad");
  ASSERT_TRUE(util::write_file_atomic(m_dir / "bad" / "x.yaml", "rules:\n  - id: lonely\n    title: t\n").ok());
  auto run = run_doctor({"rules", "sign", (m_dir / "bad").string(), "--secret-key", (m_dir / "signer.key").string()});
  EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
  EXPECT_NE(run.err.find("do not lint"), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty());
  auto perms = fs::status(m_dir / "signer.key").permissions();
  EXPECT_EQ(perms & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
}

TEST_F(RulesUpdate, KeysFromTheConfigFile) {
  LoopbackServer server({{"/good.bundle", {200, m_good, 0}}});
  std::string pub = *util::read_file(m_dir / "signer.pub");
  std::string key_line = pub.substr(pub.find('\n') + 1);
  key_line = key_line.substr(0, key_line.find('\n'));
  ASSERT_TRUE(util::write_file_atomic(m_dir / "config.yaml", "rules_update:\n  public_keys:\n    - " + key_line + "\n").ok());
  auto run = run_doctor({"rules", "update", server.url("/good.bundle"), "--config", (m_dir / "config.yaml").string(),
                         "--state-dir", m_state.string()});
  EXPECT_EQ(run.exit_code, 0) << reliability::context(run);
  auto none = run_doctor({"rules", "update", server.url("/good.bundle"), "--config", (m_dir / "nope.yaml").string(),
                          "--state-dir", m_state.string()});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(none.err.find("no trusted public key"), std::string::npos) << none.err;
}

// Audit 2026-11-25 item 3: an older, validly signed bundle installed over a newer one. Two
// signed bundles; the older serial is refused (the newer stays active) unless --allow-downgrade.
TEST_F(RulesUpdate, OlderSerialIsRefusedUnlessAllowDowngrade) {
  fs::path old_rules = m_dir / "old-rules";
  fs::copy(k_rules, old_rules, fs::copy_options::recursive);
  fs::remove(old_rules / "cuda.yaml");
  auto sign = [&](const fs::path& dir, const std::string& serial, const std::string& out) {
    auto run = run_doctor({"rules", "sign", dir.string(), "--secret-key", (m_dir / "signer.key").string(), "--serial", serial,
                           "--output", (m_dir / out).string()});
    EXPECT_EQ(run.exit_code, 0) << reliability::context(run);
    EXPECT_NE(run.err.find("serial " + serial), std::string::npos) << run.err;
    return *util::read_file(m_dir / out);
  };
  std::string newer = sign(k_rules, "20", "new.bundle");
  std::string older = sign(old_rules, "10", "old.bundle");
  std::string same_serial = sign(old_rules, "20", "same.bundle");
  LoopbackServer server({{"/new.bundle", {200, newer, 0}}, {"/old.bundle", {200, older, 0}}, {"/same.bundle", {200, same_serial, 0}}});

  ASSERT_EQ(update(server.url("/new.bundle")).exit_code, 0);
  const std::string installed = active();
  auto rollback = update(server.url("/old.bundle"));
  EXPECT_EQ(rollback.exit_code, 3) << reliability::context(rollback);
  EXPECT_NE(rollback.err.find("bundle serial 10"), std::string::npos) << rollback.err;
  EXPECT_NE(rollback.err.find("older than the active bundle's serial 20"), std::string::npos) << rollback.err;
  EXPECT_NE(rollback.err.find("--allow-downgrade"), std::string::npos) << rollback.err;
  EXPECT_EQ(active(), installed);
  auto same = update(server.url("/same.bundle"));
  EXPECT_EQ(same.exit_code, 3) << reliability::context(same);
  EXPECT_NE(same.err.find("every signing needs a higher serial"), std::string::npos) << same.err;
  EXPECT_EQ(active(), installed);
  auto listed = list();
  EXPECT_NE(listed.out.find("serial 20"), std::string::npos) << listed.out;

  auto allowed = run_doctor({"rules", "update", server.url("/old.bundle"), "--public-key", (m_dir / "signer.pub").string(),
                             "--state-dir", m_state.string(), "--allow-downgrade"});
  EXPECT_EQ(allowed.exit_code, 0) << reliability::context(allowed);
  EXPECT_NE(allowed.out.find("a downgrade"), std::string::npos) << allowed.out;
  EXPECT_NE(active(), installed);
}

// Freeze protection: an updated bundle signed longer ago than rules_update.max_age_days is a
// warning finding in check; 0 turns it off.
TEST_F(RulesUpdate, StaleBundleIsAFinding) {
  auto secret = service::decode_key(*util::read_file(m_dir / "signer.key"), 64, "signer.key");
  ASSERT_TRUE(secret.ok());
  auto files = service::read_rules_tree(k_rules);
  ASSERT_TRUE(files.ok());
  const auto signed_at = std::time(nullptr) - 200L * 86400;
  auto stale = service::pack_bundle(*files, *secret, {7, signed_at});
  ASSERT_TRUE(stale.ok());
  LoopbackServer server({{"/stale.bundle", {200, *stale, 0}}});
  auto installed = update(server.url("/stale.bundle"));
  ASSERT_EQ(installed.exit_code, 0) << reliability::context(installed);
  const std::string facts = std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json";
  ASSERT_TRUE(util::write_file_atomic(m_dir / "default.yaml", "rules_update:\n  public_keys: []\n").ok());
  auto flagged = run_doctor({"check", "--state-dir", m_state.string(), "--facts", facts, "--config", (m_dir / "default.yaml").string()});
  EXPECT_NE(flagged.out.find("[rules-bundle-stale]"), std::string::npos) << reliability::context(flagged);
  EXPECT_NE(flagged.out.find("signed 200 days ago"), std::string::npos) << flagged.out;
  EXPECT_NE(flagged.out.find("nvte-doctor rules update " + server.url("/stale.bundle")), std::string::npos) << flagged.out;
  EXPECT_GE(flagged.exit_code, 1);
  ASSERT_TRUE(util::write_file_atomic(m_dir / "off.yaml", "rules_update:\n  max_age_days: 0\n").ok());
  auto off = run_doctor({"check", "--state-dir", m_state.string(), "--facts", facts, "--config", (m_dir / "off.yaml").string()});
  EXPECT_EQ(off.out.find("rules-bundle-stale"), std::string::npos) << off.out;
  ASSERT_TRUE(util::write_file_atomic(m_dir / "long.yaml", "rules_update:\n  max_age_days: 365\n").ok());
  auto longer = run_doctor({"check", "--state-dir", m_state.string(), "--facts", facts, "--config", (m_dir / "long.yaml").string()});
  EXPECT_EQ(longer.out.find("rules-bundle-stale"), std::string::npos) << longer.out;
}

// The doctor in the background with stdout and stderr discarded, for a signal at a chosen moment.
pid_t spawn_doctor(const std::vector<std::string>& args) {
  std::vector<std::string> strings = {NVTE_BINARY};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(strings.size() + 1);
  for (auto& a : strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto environment = reliability::doctor_environment();
  std::vector<std::string> env_strings;
  env_strings.reserve(environment.size());
  for (const auto& [name, value] : environment) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

std::vector<std::string> incoming_in(const fs::path& bundles) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(bundles, ec))
    if (entry.path().filename().string().starts_with(".incoming-")) names.push_back(entry.path().filename().string());
  return names;
}

// Audit 2026-12-01 item 11: SIGTERM, SIGINT or SIGHUP between mkdtemp and the rename (a unit's
// stop, Ctrl-C) left `.incoming-XXXXXX`, a full copy of the rules, in rules/bundles. The signal
// is sent as soon as the directory appears, i.e. while the bundle is being unpacked and linted.
TEST_F(RulesUpdate, AStopDuringTheUnpackLeavesNoIncomingDirectory) {
  LoopbackServer server({{"/good.bundle", {200, m_good, 0}}});
  int interrupted = 0;
  for (int signal : {SIGTERM, SIGINT, SIGHUP, SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(strsignal(signal));
    fs::remove_all(m_state);
    pid_t pid = spawn_doctor(
        {"rules", "update", server.url("/good.bundle"), "--public-key", (m_dir / "signer.pub").string(), "--state-dir", m_state.string()});
    ASSERT_GT(pid, 0);
    bool seen = false;
    int status = 0;
    for (auto start = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - start < std::chrono::seconds(30);) {
      if (!incoming_in(m_state / "rules" / "bundles").empty()) {
        seen = true;
        ::kill(pid, signal);
        break;
      }
      if (::waitpid(pid, &status, WNOHANG) == pid) break; // finished before it could be stopped
    }
    if (seen) {
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    }
    if (!seen || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) continue; // too quick to interrupt this time
    ++interrupted;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal) << "status " << status << ": it ends as the signal would end it";
    EXPECT_EQ(incoming_in(m_state / "rules" / "bundles"), std::vector<std::string>{}) << "the partial bundle is left behind";
    EXPECT_EQ(active(), "") << "nothing was activated";
  }
  EXPECT_GE(interrupted, 3) << "the update was never caught in the middle: the test does not test";
}

// Item 11, second half: a leftover was removed only an hour after it was made. Now the next update
// removes one whose owner is gone at any age, and leaves the one a live update holds.
TEST_F(RulesUpdate, TheNextUpdateRemovesLeftoversWhoseOwnerIsGone) {
  const fs::path bundles = m_state / "rules" / "bundles";
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  const std::string dead = ".incoming-" + std::to_string(gone) + "-AAAAAA";
  const std::string old_style = ".incoming-BBBBBB";
  const std::string live = ".incoming-" + std::to_string(::getpid()) + "-CCCCCC";
  for (const auto& name : {dead, old_style, live}) {
    fs::create_directories(bundles / name / "attention");
    ASSERT_TRUE(util::write_file_atomic(bundles / name / "attention" / "x.yaml", "rules: []\n").ok());
  }
  util::Fd held(::open((bundles / live).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(held);
  ASSERT_EQ(::flock(held.get(), LOCK_EX | LOCK_NB), 0); // as an update in progress holds its own
  LoopbackServer server({{"/good.bundle", {200, m_good, 0}}});
  auto run = update(server.url("/good.bundle"));
  ASSERT_EQ(run.exit_code, 0) << reliability::context(run);
  EXPECT_EQ(incoming_in(bundles), std::vector<std::string>{live});
}

TEST(Bundle, RoundTripAndRejections) {
  auto pair = service::generate_key_pair();
  ASSERT_TRUE(pair.ok());
  std::vector<service::BundleFile> files = {{"a.yaml", "rules: []\n"}, {"sub/b.yaml", "x\n\n"}};
  auto bundle = service::pack_bundle(files, pair->secret_key, {42, 1764000000});
  ASSERT_TRUE(bundle.ok());
  std::vector<std::string> keys = {pair->public_key};
  auto unpacked = service::unpack_bundle(*bundle, keys, "test");
  ASSERT_TRUE(unpacked.ok()) << unpacked.error().message;
  ASSERT_EQ(unpacked->files.size(), 2u);
  EXPECT_EQ(unpacked->files[1].path, "sub/b.yaml");
  EXPECT_EQ(unpacked->files[1].content, "x\n\n");
  EXPECT_EQ(unpacked->key_id, service::key_id(pair->public_key));
  EXPECT_EQ(unpacked->version.serial, 42u);
  EXPECT_EQ(unpacked->version.created, 1764000000);
  // The serial is signed: raising it in the text breaks the signature.
  std::string relabelled = *bundle;
  relabelled.replace(relabelled.find("serial 42\n"), 10, "serial 99\n");
  EXPECT_EQ(service::unpack_bundle(relabelled, keys, "test").error().kind, util::ErrorKind::permission);
  for (const char* bad : {"../x.yaml", "/abs.yaml", "a/./b.yaml", "a b.yaml", "x.sh"}) {
    std::vector<service::BundleFile> evil = {{bad, "x"}};
    EXPECT_FALSE(service::pack_bundle(evil, pair->secret_key, {}).ok()) << bad;
  }
  EXPECT_EQ(service::unpack_bundle(*bundle, {}, "test").error().kind, util::ErrorKind::permission);
  EXPECT_EQ(service::unpack_bundle(bundle->substr(0, bundle->size() - 1), keys, "test").error().kind, util::ErrorKind::parse);
  EXPECT_FALSE(service::unpack_bundle("", keys, "test").ok());
  EXPECT_EQ(service::encode_key(*service::decode_key(service::encode_key(pair->public_key), 32, "k")),
            service::encode_key(pair->public_key));
  EXPECT_FALSE(service::decode_key("bm90IGEga2V5", 32, "k").ok());
}

} // namespace
