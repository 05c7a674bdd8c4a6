// HTTP push against a server on 127.0.0.1 written here: it first refuses connections (bound,
// not listening), then hangs, answers 500, closes in the middle of the request body, and finally
// accepts. Three reports pushed on three "runs" arrive exactly once each, in order.
#include "service/curl_api.hpp"
#include "service/push.hpp"
#include "service/url_policy.hpp"

#include "util/fd.hpp"
#include "util/file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <cstdarg>
#include <deque>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>

using testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

enum class Behaviour { hang, error_500, close_mid_body, redirect, accept };

struct Received {
  std::string key;
  std::string authorization;
  std::string body;
};

class TestServer {
public:
  TestServer() {
    m_listen.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(m_listen.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(m_listen.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(m_listen.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    m_port = ntohs(addr.sin_port);
  }
  ~TestServer() {
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
  }

  int port() const { return m_port; }
  // Bound but not listening: connections are refused until listen() is called.
  void listen() {
    ::listen(m_listen.get(), 16);
    m_thread = std::thread([this] { serve(); });
  }
  void script(std::initializer_list<Behaviour> behaviours) {
    std::lock_guard lock(m_mutex);
    m_script.insert(m_script.end(), behaviours);
  }
  std::vector<Received> received() {
    std::lock_guard lock(m_mutex);
    return m_received;
  }
  int connections() const { return m_connections; }

private:
  void serve() {
    while (!m_stop) {
      pollfd p{m_listen.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      util::Fd conn(::accept4(m_listen.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) continue;
      ++m_connections;
      Behaviour b = Behaviour::accept;
      {
        std::lock_guard lock(m_mutex);
        if (!m_script.empty()) {
          b = m_script.front();
          m_script.pop_front();
        }
      }
      handle(conn, b);
    }
  }

  // Reads until pred(data) or the peer closes / the server stops; false when it never held.
  bool read_until(const util::Fd& conn, std::string& data, const std::function<bool(const std::string&)>& pred) {
    char buffer[4096];
    while (!pred(data)) {
      if (m_stop) return false;
      pollfd p{conn.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      ssize_t n = ::recv(conn.get(), buffer, sizeof buffer, 0);
      if (n <= 0) return false;
      data.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
  }

  static std::string header(const std::string& head, const std::string& name) {
    std::string lower = head;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string needle = "\r\n" + name + ":";
    auto pos = lower.find(needle);
    if (pos == std::string::npos) return {};
    auto start = pos + needle.size();
    auto end = head.find("\r\n", start);
    std::string value = head.substr(start, end - start);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    return value;
  }

  void handle(const util::Fd& conn, Behaviour b) {
    std::string data;
    if (!read_until(conn, data, [](const std::string& d) { return d.find("\r\n\r\n") != std::string::npos; })) return;
    std::size_t head_end = data.find("\r\n\r\n") + 4;
    std::string head = data.substr(0, head_end);
    std::size_t length = std::stoul(header(head, "content-length").empty() ? "0" : header(head, "content-length"));
    if (b == Behaviour::hang) {
      // Never answer; wait until the client gives up and closes.
      read_until(conn, data, [](const std::string&) { return false; });
      return;
    }
    if (b == Behaviour::close_mid_body) {
      // Take part of the body (the report is 100 KB), then drop the connection without an answer.
      EXPECT_LT(data.size(), head_end + length) << "the whole body arrived before the close";
      ::shutdown(conn.get(), SHUT_RDWR);
      return;
    }
    if (!read_until(conn, data, [&](const std::string& d) { return d.size() >= head_end + length; })) return;
    std::string reply;
    if (b == Behaviour::error_500) {
      reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\noops\n";
    } else if (b == Behaviour::redirect) {
      reply = "HTTP/1.1 302 Found\r\nLocation: http://mirror.example.invalid/r.bundle\r\nContent-Length: 6\r\n"
              "Connection: close\r\n\r\nmoved\n";
    } else {
      {
        std::lock_guard lock(m_mutex);
        m_received.push_back({header(head, "idempotency-key"), header(head, "authorization"), data.substr(head_end, length)});
      }
      reply = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
    }
    ::send(conn.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
  }

  util::Fd m_listen;
  int m_port = 0;
  std::thread m_thread;
  std::atomic<bool> m_stop{false};
  std::atomic<int> m_connections{0};
  std::mutex m_mutex;
  std::deque<Behaviour> m_script;
  std::vector<Received> m_received;
};

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("nvte-push-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

service::PushConfig config_for(int port, const fs::path& dir) {
  service::PushConfig c;
  c.url = "http://127.0.0.1:" + std::to_string(port) + "/reports";
  c.connect_timeout = 1000ms;
  c.timeout = 1000ms;
  c.retries = 1;
  c.backoff = 10ms;
  c.max_backoff = 40ms;
  c.spool_dir = dir / "spool";
  c.spool_max_reports = 10;
  return c;
}

std::string report(char name) { return std::string(R"({"report": ")") + name + R"(", "pad": ")" + std::string(100000, name) + "\"}"; }

TEST(Push, FailingServerLosesNothingAndDuplicatesNothing) {
  fs::path dir = fresh_dir("sequence");
  TestServer server;
  auto config = config_for(server.port(), dir);
  ASSERT_TRUE(util::write_file_atomic(dir / "token", "s3cret-token\n", 0600));
  config.token_file = dir / "token";
  std::vector<std::chrono::milliseconds> sleeps;
  auto sleep = [&](std::chrono::milliseconds ms) {
    sleeps.push_back(ms);
    std::this_thread::sleep_for(ms);
  };

  // Run 1: nothing listens yet (refused, twice).
  auto r1 = service::push_report(config, report('A'), sleep);
  EXPECT_EQ(r1.sent, 0u);
  EXPECT_EQ(r1.pending, 1u);
  EXPECT_THAT(r1.last_error, HasSubstr("127.0.0.1"));
  EXPECT_EQ(sleeps.size(), 1u) << "one retry after a backoff";

  // Run 2: the server hangs (timeout), then answers 500; A stays first, B queues behind it.
  server.script({Behaviour::hang, Behaviour::error_500});
  server.listen();
  auto r2 = service::push_report(config, report('B'), sleep);
  EXPECT_EQ(r2.sent, 0u);
  EXPECT_EQ(r2.pending, 2u);
  EXPECT_THAT(r2.last_error, HasSubstr("HTTP 500"));
  EXPECT_EQ(server.connections(), 2);

  // Run 3: the server drops the first request mid-body, then accepts everything.
  server.script({Behaviour::close_mid_body});
  auto r3 = service::push_report(config, report('C'), sleep);
  EXPECT_EQ(r3.sent, 3u) << r3.last_error;
  EXPECT_EQ(r3.pending, 0u);
  EXPECT_EQ(r3.last_error, "");

  auto got = server.received();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].body, report('A'));
  EXPECT_EQ(got[1].body, report('B'));
  EXPECT_EQ(got[2].body, report('C'));
  EXPECT_LT(got[0].key, got[1].key);
  EXPECT_LT(got[1].key, got[2].key);
  for (const auto& g : got) EXPECT_EQ(g.authorization, "Bearer s3cret-token");
  auto left = service::Spool(config.spool_dir, 10, 1 << 20).pending();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
  for (auto ms : sleeps) {
    EXPECT_GE(ms, 5ms);
    EXPECT_LE(ms, 40ms);
  }
  fs::remove_all(dir);
}

TEST(Push, SpoolDropsTheOldestBeyondItsBounds) {
  fs::path dir = fresh_dir("bounds");
  service::Spool spool(dir, 2, 1 << 20);
  testing::internal::CaptureStderr();
  for (char c : {'A', 'B', 'C'}) ASSERT_TRUE(spool.add(report(c)).ok());
  std::string warned = testing::internal::GetCapturedStderr();
  // The warning names the bounds the spool was over, not only its size.
  EXPECT_NE(warned.find("is full (3 reports, "), std::string::npos) << warned;
  EXPECT_NE(warned.find("; limit 2 reports, 1048576 bytes): dropping the oldest undelivered report"), std::string::npos) << warned;
  auto files = spool.pending();
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ(*util::read_file((*files)[0]), report('B'));
  EXPECT_EQ(*util::read_file((*files)[1]), report('C'));

  service::Spool small(dir / "bytes", 100, 250000); // two 100 KB reports fit, three do not
  for (char c : {'A', 'B', 'C'}) ASSERT_TRUE(small.add(report(c)).ok());
  files = small.pending();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ(*util::read_file((*files)[0]), report('B'));
  fs::remove_all(dir);
}

// Spooled files that cannot be reports (a torn disk, a hand edit, a directory in the way) are set
// aside with a warning; the good reports before and after them are delivered in order, once.
TEST(Push, CorruptedSpoolFilesAreSetAsideWithAWarning) {
  fs::path dir = fresh_dir("corrupt");
  TestServer server;
  server.listen();
  auto config = config_for(server.port(), dir);
  service::Spool spool(config.spool_dir, 10, 1 << 20);
  ASSERT_TRUE(spool.add(report('A')).ok());
  auto torn = spool.add(report('T'));
  ASSERT_TRUE(torn.ok());
  ASSERT_EQ(::truncate(torn->c_str(), 5000), 0); // a report cut off mid-string
  auto empty = spool.add(report('E'));
  ASSERT_TRUE(util::write_file_atomic(*empty, ""));
  auto not_object = spool.add(report('N'));
  ASSERT_TRUE(util::write_file_atomic(*not_object, "[1, 2, 3]"));
  fs::create_directory(config.spool_dir / "99999999999999999998-1.json"); // not a file at all

  testing::internal::CaptureStderr();
  auto result = service::push_report(config, report('C'));
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(result.sent, 2u) << result.last_error;
  EXPECT_EQ(result.set_aside, 4u);
  EXPECT_EQ(result.pending, 0u);
  EXPECT_EQ(result.last_error, "");
  auto got = server.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, report('A'));
  EXPECT_EQ(got[1].body, report('C'));
  EXPECT_THAT(log, HasSubstr(torn->filename().string() + " is not JSON (truncated or corrupted): set aside as " +
                             torn->filename().string() + ".corrupt"));
  EXPECT_THAT(log, HasSubstr(empty->filename().string() + " is empty"));
  EXPECT_THAT(log, HasSubstr(not_object->filename().string() + " is JSON but not a report"));
  EXPECT_THAT(log, HasSubstr("99999999999999999998-1.json cannot be read"));
  EXPECT_TRUE(fs::exists(torn->string() + ".corrupt"));
  EXPECT_EQ(fs::file_size(torn->string() + ".corrupt"), 5000u) << "set aside as it was, for a post-mortem";
  auto left = spool.pending();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());

  // Set-aside files do not pile up: 4 + 6 of them, and only the newest k_max_set_aside stay.
  for (int i = 0; i < 6; ++i) {
    auto bad = spool.add("{not json");
    ASSERT_TRUE(bad.ok());
  }
  testing::internal::CaptureStderr();
  auto again = service::flush_spool(config, spool);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(again.set_aside, 6u);
  auto names = util::list_directory(config.spool_dir);
  ASSERT_TRUE(names.ok());
  std::size_t corrupt = 0;
  for (const auto& name : *names) corrupt += name.ends_with(".json.corrupt");
  EXPECT_EQ(corrupt, service::Spool::k_max_set_aside);
  fs::remove_all(dir);
}

TEST(Push, TokenFileMustBePrivate) {
  fs::path dir = fresh_dir("token");
  ASSERT_TRUE(util::write_file_atomic(dir / "token", "abc\n", 0644));
  auto token = service::read_token(dir / "token");
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.error().message, HasSubstr("mode 0644"));
  EXPECT_THAT(token.error().message, testing::Not(HasSubstr("abc")));
  ::chmod((dir / "token").c_str(), 0600);
  token = service::read_token(dir / "token");
  ASSERT_TRUE(token.ok()) << token.error().message;
  EXPECT_EQ(*token, "abc");
  ASSERT_TRUE(util::write_file_atomic(dir / "empty", "\n", 0600));
  EXPECT_FALSE(service::read_token(dir / "empty").ok());
  EXPECT_FALSE(service::read_token(dir / "missing").ok());
  fs::remove_all(dir);
}

TEST(Push, NoTokenOverPlainHttpToARemoteHost) {
  service::PushConfig c;
  c.url = "http://collector.example.invalid/reports";
  auto sent = service::post_report(c, "tok", "{}", "k");
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().kind, util::ErrorKind::invalid);
  EXPECT_THAT(sent.error().message, HasSubstr("https://"));
  EXPECT_THAT(sent.error().message, testing::Not(HasSubstr("tok\"")));
}

// Audit 2026-11-25 items 4 and 5: the loopback guards were string prefixes. The table is the
// policy: the host libcurl connects to decides, parsed by libcurl.
TEST(UrlPolicy, GuardTable) {
  struct Case {
    const char* url;
    bool allowed;        // by require_secure_url (rules updates, a push with a token)
    const char* host;    // the host libcurl connects to ("" when the URL is refused unparsed)
  };
  const Case cases[] = {
      {"https://rules.example.org/r.bundle", true, "rules.example.org"},
      {"http://127.0.0.1:8080/r.bundle", true, "127.0.0.1"},
      {"http://127.0.0.1/r.bundle", true, "127.0.0.1"},
      {"http://127.1.2.3/r.bundle", true, "127.1.2.3"},
      {"http://localhost/r.bundle", true, "localhost"},
      {"http://LOCALHOST:9/r.bundle", true, ""},
      {"http://[::1]:8080/r.bundle", true, "::1"},
      {"HTTP://127.0.0.1/r.bundle", true, ""},
      {"http://localhost:@nonexistent.invalid/r.bundle", false, "nonexistent.invalid"},
      {"http://127.0.0.1:@nonexistent.invalid/r.bundle", false, "nonexistent.invalid"},
      {"http://127.0.0.1@nonexistent.invalid/r.bundle", false, "nonexistent.invalid"},
      {"http://127.attacker.invalid:8080/push", false, "127.attacker.invalid"},
      {"http://localhost.attacker.invalid/push", false, "localhost.attacker.invalid"},
      {"http://nonexistent.invalid/r.bundle", false, "nonexistent.invalid"},
      {"http://[::2]/r.bundle", false, "::2"},
      {"http://128.0.0.1/r.bundle", false, "128.0.0.1"},
      {"ftp://127.0.0.1/r.bundle", false, ""},
      {"file:///etc/passwd", false, ""},
      {"127.0.0.1/r.bundle", false, ""},
      {"http://", false, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.url);
    auto decided = service::require_secure_url(c.url, "rules updates");
    EXPECT_EQ(decided.ok(), c.allowed) << (decided.ok() ? std::string("allowed") : decided.error().message);
    if (*c.host) {
      auto parsed = service::parse_url(c.url);
      ASSERT_TRUE(parsed.ok()) << parsed.error().message;
      EXPECT_EQ(parsed->host, c.host);
      if (!c.allowed) {
        EXPECT_THAT(decided.error().message, HasSubstr("connects to " + std::string(c.host)));
      }
    }
  }
  EXPECT_TRUE(service::is_loopback_host("127.255.255.255"));
  EXPECT_FALSE(service::is_loopback_host("127.1")) << "only the dotted quad counts";
  EXPECT_FALSE(service::is_loopback_host("2130706433"));
  EXPECT_FALSE(service::is_loopback_host("127.0.0.1.nip.io"));
}

TEST(Push, TokenGuardUsesTheConnectedHost) {
  service::PushConfig c;
  c.url = "http://127.attacker.invalid:8080/push";
  auto sent = service::post_report(c, "tok", "{}", "k");
  ASSERT_FALSE(sent.ok());
  EXPECT_THAT(sent.error().message, HasSubstr("refusing to send the push token over plain http to 127.attacker.invalid"));
  c.url = "http://localhost:@nonexistent.invalid/push";
  sent = service::post_report(c, "tok", "{}", "k");
  ASSERT_FALSE(sent.ok());
  EXPECT_THAT(sent.error().message, HasSubstr("refusing to send the push token"));
}

// Audit item 20: a redirect read as "not a rules bundle".
TEST(Push, RedirectsAreNamedAsSuch) {
  TestServer server;
  server.script({Behaviour::redirect, Behaviour::redirect});
  server.listen();
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/r.bundle";
  auto got = service::http_get(url, 2000ms, 1u << 20);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.error().message, HasSubstr("HTTP 302: the server redirects to http://mirror.example.invalid/r.bundle"));
  EXPECT_THAT(got.error().message, HasSubstr("redirects are not followed"));
  service::PushConfig c;
  c.url = url;
  c.connect_timeout = 1000ms;
  c.timeout = 1000ms;
  auto sent = service::post_report(c, "", "{}", "k");
  ASSERT_FALSE(sent.ok());
  EXPECT_THAT(sent.error().message, HasSubstr("HTTP 302: the server redirects"));
}

// {host} in the URL: one file per node on a WebDAV or object store; the name cannot leave its path.
TEST(Push, UrlNamesTheHost) {
  EXPECT_EQ(service::push_url("https://c.example/reports/{host}.json", "gpu0001"), "https://c.example/reports/gpu0001.json");
  EXPECT_EQ(service::push_url("https://c.example/{host}/{host}.json", "a-b.c_d"), "https://c.example/a-b.c_d/a-b.c_d.json");
  EXPECT_EQ(service::push_url("https://c.example/r/{host}.json", "../../etc/x y?"), "https://c.example/r/..%2F..%2Fetc%2Fx%20y%3F.json");
  EXPECT_EQ(service::push_url("https://c.example/r/{host}.json", ""), "https://c.example/r/unknown.json");
  EXPECT_EQ(service::push_url("https://c.example/reports", "gpu1"), "https://c.example/reports");
}

// A libcurl's curl_easy_setopt for allow_only_http: new (7.85+) takes CURLOPT_PROTOCOLS_STR, old
// (bullseye's 7.74, where the portable build runs) answers CURLE_UNKNOWN_OPTION to it, and none
// takes either; every call is recorded as "option=value".
enum class FakeCurl { new_curl, old_curl, none };
FakeCurl g_fake_curl = FakeCurl::new_curl;
std::vector<std::string> g_setopt_calls;

CURLcode fake_setopt(CURL*, CURLoption option, ...) {
  va_list args;
  va_start(args, option);
  std::string value = option == 181 ? std::to_string(va_arg(args, long)) : std::string(va_arg(args, const char*));
  va_end(args);
  g_setopt_calls.push_back(std::to_string(static_cast<int>(option)) + "=" + value);
  if (g_fake_curl == FakeCurl::none || (g_fake_curl == FakeCurl::old_curl && option != 181)) return CURLE_UNKNOWN_OPTION;
  return CURLE_OK;
}

TEST(Push, ProtocolsAreLimitedOnOldAndNewLibcurl) {
  service::CurlApi api;
  api.easy_setopt = fake_setopt;
  g_fake_curl = FakeCurl::new_curl;
  g_setopt_calls.clear();
  EXPECT_EQ(service::allow_only_http(api, nullptr), CURLE_OK);
  EXPECT_THAT(g_setopt_calls, testing::ElementsAre("10318=http,https"));
  g_fake_curl = FakeCurl::old_curl;
  g_setopt_calls.clear();
  EXPECT_EQ(service::allow_only_http(api, nullptr), CURLE_OK);
  EXPECT_THAT(g_setopt_calls, testing::ElementsAre("10318=http,https", "181=3"));
  g_fake_curl = FakeCurl::none;
  g_setopt_calls.clear();
  EXPECT_NE(service::allow_only_http(api, nullptr), CURLE_OK);
}

TEST(Push, RetryDelayGrowsAndIsCapped) {
  service::PushConfig c;
  c.backoff = 100ms;
  c.max_backoff = 350ms;
  for (int i = 0; i < 20; ++i) {
    auto d1 = service::retry_delay(c, 1), d2 = service::retry_delay(c, 2), d5 = service::retry_delay(c, 5);
    EXPECT_GE(d1, 50ms);
    EXPECT_LE(d1, 100ms);
    EXPECT_GE(d2, 100ms);
    EXPECT_LE(d2, 200ms);
    EXPECT_GE(d5, 175ms);
    EXPECT_LE(d5, 350ms);
  }
}

} // namespace
