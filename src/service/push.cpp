// The only libcurl user. libcurl is dlopen'd on the first push, not linked: linked, its ~30
// dependent libraries cost every `nvte-doctor` process about 6 ms of start-up, three times the
// work of an unchanged `run` (docs/service.md). <curl/curl.h> gives the types and constants;
// the few entry points are looked up once. One easy handle per request, owned by a unique_ptr;
// the header list likewise. TLS verification is on and never turned off; the token travels only in the
// Authorization header, which libcurl does not log (verbose mode is never enabled here), and a
// token is refused over plain http to anything but a loopback address.
//
// Spool names are "<unix ns, 20 digits>-<pid>.json", so lexical order is arrival order; a name
// that would not sort after the newest existing one is bumped past it.
#include "service/push.hpp"

#include "service/curl_api.hpp"
#include "service/url_policy.hpp"

#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>
#include <optional>
#include <random>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace service {

namespace fs = std::filesystem;

namespace {

bool is_spool_name(const std::string& name) { return name.size() > 5 && util::ends_with(name, ".json") && name[0] != '.'; }

std::size_t discard_body(char*, std::size_t size, std::size_t count, void*) { return size * count; }

// Why a spooled body cannot be a report (every report is one JSON object); nullopt when it can.
std::optional<std::string> corrupt_report(const std::string& body) {
  if (body.empty()) return "is empty";
  if (auto checked = util::check_json(body, "it"); !checked) return "breaks a limit of the input layer: " + checked.error().message;
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded()) return "is not JSON (truncated or corrupted)";
  if (!doc.is_object()) return "is JSON but not a report";
  return std::nullopt;
}

} // namespace

util::Result<fs::path> Spool::add(std::string_view document) {
  std::error_code ec;
  fs::create_directories(m_dir, ec);
  if (ec) return util::make_error(util::ErrorKind::io, "cannot create spool directory " + m_dir.string() + ": " + ec.message());
  auto now = std::chrono::system_clock::now().time_since_epoch();
  long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  auto existing = NVTE_TRY(pending());
  if (!existing.empty()) {
    auto last = util::parse_int(existing.back().filename().string().substr(0, 20));
    if (last && *last >= ns) ns = *last + 1;
  }
  char name[64];
  std::snprintf(name, sizeof name, "%020lld-%d.json", ns, static_cast<int>(::getpid()));
  fs::path file = m_dir / name;
  // Each spool file has a name of its own, so write_file_atomic's sweep of ".<name>.tmp.*"
  // never meets the temporaries of a writer killed mid-spool: swept here.
  util::sweep_temporaries(m_dir, "");
  NVTE_TRY_VOID(util::write_file_atomic(file, document, 0600));
  enforce_bounds();
  return file;
}

util::Result<std::vector<fs::path>> Spool::pending() const {
  std::error_code ec;
  if (!fs::exists(m_dir, ec)) return std::vector<fs::path>{};
  auto names = NVTE_TRY(util::list_directory(m_dir));
  std::vector<fs::path> files;
  for (const auto& name : names) {
    if (is_spool_name(name)) files.push_back(m_dir / name);
  }
  return files; // list_directory sorts: oldest first
}

std::size_t Spool::enforce_bounds() {
  auto files = pending();
  if (!files) return 0;
  std::vector<std::pair<fs::path, std::uint64_t>> sized;
  std::uint64_t total = 0;
  for (const auto& f : *files) {
    std::error_code ec;
    auto size = fs::file_size(f, ec);
    sized.emplace_back(f, ec ? 0 : size);
    total += ec ? 0 : size;
  }
  std::size_t dropped = 0;
  std::size_t i = 0;
  // The newest report always stays, even when it alone exceeds the byte bound.
  while (i + 1 < sized.size() && (sized.size() - i > m_max_reports || total > m_max_bytes)) {
    util::log::warning("push spool " + m_dir.string() + " is full (" + std::to_string(sized.size() - i) + " reports, " +
                       std::to_string(total) + " bytes; limit " + std::to_string(m_max_reports) + " reports, " +
                       std::to_string(m_max_bytes) + " bytes): dropping the oldest undelivered report " +
                       sized[i].first.filename().string());
    std::error_code ec;
    fs::remove(sized[i].first, ec);
    total -= sized[i].second;
    ++i;
    ++dropped;
  }
  return dropped;
}

bool Spool::set_aside(const fs::path& file, const std::string& why) {
  fs::path target = file;
  target += ".corrupt";
  std::error_code ec;
  fs::rename(file, target, ec);
  if (ec) {
    util::log::warning("push spool: " + file.string() + " " + why + ", and it cannot be set aside (" + ec.message() +
                       "): skipping it");
    return false;
  }
  util::log::warning("push spool: " + file.string() + " " + why + ": set aside as " + target.filename().string() +
                     ", not sent");
  auto names = util::list_directory(m_dir);
  if (!names) return true;
  std::vector<std::string> corrupt;
  for (const auto& name : *names) {
    if (util::ends_with(name, ".json.corrupt")) corrupt.push_back(name);
  }
  for (std::size_t i = 0; i + k_max_set_aside < corrupt.size(); ++i) fs::remove_all(m_dir / corrupt[i], ec);
  return true;
}

util::Result<std::string> read_token(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    int err = errno;
    return util::make_error(util::errno_kind(err), "push token file " + file.string() + ": " + util::errno_text(err));
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return util::make_error(util::ErrorKind::permission, "push token file " + file.string() + " has mode " + mode +
                                                              ": group and others must have no access (chmod 600 " +
                                                              file.string() + ")");
  }
  std::string token = NVTE_TRY(util::read_file(file, 64 << 10));
  token = std::string(util::trim(token));
  if (token.empty()) return util::make_error(util::ErrorKind::invalid, "push token file " + file.string() + " is empty");
  if (token.find_first_of("\r\n") != std::string::npos) {
    return util::make_error(util::ErrorKind::invalid, "push token file " + file.string() + " holds more than one line");
  }
  return token;
}

util::Result<void> post_report(const PushConfig& config, const std::string& token, const std::string& body,
                               const std::string& idempotency_key) {
  auto target = parse_url(config.url);
  if (!target) return target.error();
  if (!token.empty() && target->scheme == "http" && !target->loopback) {
    return util::make_error(util::ErrorKind::invalid, "refusing to send the push token over plain http to " +
                                                          target->host + "; use an https:// url");
  }
  const auto& loaded = curl_api();
  if (!loaded) return loaded.error();
  const CurlApi& api = *loaded;
  CurlHandle curl(api.easy_init());
  if (!curl) return util::make_error(util::ErrorKind::io, "curl_easy_init failed");
  CurlList headers;
  auto append = [&](const std::string& header) {
    curl_slist* next = api.slist_append(headers.get(), header.c_str());
    if (next) {
      (void)headers.release();
      headers.reset(next);
    }
    return next != nullptr;
  };
  bool ok = append("Content-Type: application/json") && append("Idempotency-Key: " + idempotency_key) &&
            append("Expect:") && (token.empty() || append("Authorization: Bearer " + token));
  if (!ok) return util::make_error(util::ErrorKind::io, "curl_slist_append failed");

  char error_buffer[CURL_ERROR_SIZE] = {};
  CURL* h = curl.get();
  api.easy_setopt(h, CURLOPT_URL, config.url.c_str());
  api.easy_setopt(h, CURLOPT_POST, 1L);
  api.easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  api.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  // The body goes out as for a POST; only the method's name changes (a WebDAV server stores it).
  if (config.method == PushMethod::put) api.easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  api.easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  api.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  api.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  if (allow_only_http(api, h) != CURLE_OK) return util::make_error(util::ErrorKind::io, "libcurl cannot be limited to http and https");
  api.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  // Plain http was allowed because the host is this one: no proxy may carry it elsewhere.
  if (target->loopback) api.easy_setopt(h, CURLOPT_NOPROXY, "*");
  api.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(config.connect_timeout.count()));
  api.easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(config.timeout.count()));
  api.easy_setopt(h, CURLOPT_USERAGENT, "nvte-doctor");
  api.easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_body);
  api.easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);

  CURLcode rc = api.easy_perform(h);
  if (rc != CURLE_OK) {
    std::string detail = error_buffer[0] ? error_buffer : api.easy_strerror(rc);
    auto kind = rc == CURLE_OPERATION_TIMEDOUT ? util::ErrorKind::timeout : util::ErrorKind::io;
    return util::make_error(kind, "push to " + config.url + " failed: " + detail);
  }
  long status = 0;
  api.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 300 && status <= 399) {
    char* location = nullptr;
    api.easy_getinfo(h, CURLINFO_REDIRECT_URL, &location);
    return util::make_error(util::ErrorKind::invalid, "push to " + redirect_error(config.url, status, location));
  }
  if (status < 200 || status > 299) {
    return util::make_error(util::ErrorKind::io, "push to " + config.url + " failed: HTTP " + std::to_string(status));
  }
  return {};
}

std::string push_url(std::string_view url, std::string_view host) {
  static const char k_hex[] = "0123456789ABCDEF";
  std::string name;
  for (unsigned char c : host.empty() ? std::string_view("unknown") : host) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += k_hex[c >> 4];
      name += k_hex[c & 15];
    }
  }
  std::string out(url);
  for (std::size_t at = out.find("{host}"); at != std::string::npos; at = out.find("{host}", at + name.size())) out.replace(at, 6, name);
  return out;
}

std::chrono::milliseconds retry_delay(const PushConfig& config, int attempt) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  double base = static_cast<double>(config.backoff.count());
  for (int i = 1; i < attempt && base < static_cast<double>(config.max_backoff.count()); ++i) base *= 2;
  base = std::min(base, static_cast<double>(config.max_backoff.count()));
  double factor = std::uniform_real_distribution<double>(0.5, 1.0)(random);
  return std::chrono::milliseconds(static_cast<long long>(base * factor));
}

namespace {

FlushResult flush_with_token(const PushConfig& config, Spool& spool, const std::string& token, const SleepFunction& sleep) {
  FlushResult result;
  auto do_sleep = sleep ? sleep : [](std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); };
  auto files = spool.pending();
  if (!files) {
    result.last_error = files.error().message;
    return result;
  }
  for (std::size_t i = 0; i < files->size(); ++i) {
    const fs::path& file = (*files)[i];
    auto body = util::read_file(file);
    if (!body) {
      // A spool file that vanished (dropped by a concurrent bound) is not an error.
      if (body.error().kind == util::ErrorKind::not_found) continue;
      if (spool.set_aside(file, "cannot be read (" + body.error().message + ")")) ++result.set_aside;
      continue;
    }
    if (auto why = corrupt_report(*body)) {
      if (spool.set_aside(file, *why)) ++result.set_aside;
      continue;
    }
    PushConfig target = config;
    if (config.url.find("{host}") != std::string::npos) {
      auto doc = nlohmann::json::parse(*body, nullptr, false);
      bool named = doc.is_object() && doc.contains("host") && doc["host"].is_string();
      target.url = push_url(config.url, named ? doc["host"].get<std::string>() : "");
    }
    std::string key = file.stem().string();
    util::Result<void> sent = util::make_error(util::ErrorKind::io, "not sent");
    for (int attempt = 0; attempt <= config.retries; ++attempt) {
      if (attempt > 0) {
        auto delay = retry_delay(config, attempt);
        util::log::info("push: retry " + std::to_string(attempt) + " of " + key + " in " + std::to_string(delay.count()) +
                        " ms after: " + sent.error().message);
        do_sleep(delay);
      }
      sent = post_report(target, token, *body, key);
      if (sent.ok()) break;
      if (sent.error().kind == util::ErrorKind::invalid) break; // configuration problems do not heal
    }
    if (!sent.ok()) {
      result.last_error = sent.error().message;
      result.pending = files->size() - i;
      return result;
    }
    std::error_code ec;
    fs::remove(file, ec);
    if (ec) util::log::warning("push: delivered " + file.string() + " but cannot remove it: " + ec.message());
    ++result.sent;
  }
  return result;
}

} // namespace

FlushResult flush_spool(const PushConfig& config, Spool& spool, const SleepFunction& sleep) {
  std::string token;
  if (config.token_file) {
    auto read = read_token(*config.token_file);
    if (!read) {
      FlushResult result;
      result.last_error = read.error().message;
      if (auto files = spool.pending()) result.pending = files->size();
      return result;
    }
    token = std::move(*read);
  }
  return flush_with_token(config, spool, token, sleep);
}

FlushResult push_report(const PushConfig& config, std::string_view document, const SleepFunction& sleep) {
  Spool spool(config.spool_dir, config.spool_max_reports, config.spool_max_bytes);
  std::size_t before = 0;
  if (auto files = spool.pending()) before = files->size();
  auto added = spool.add(document);
  if (!added) {
    FlushResult result;
    result.last_error = added.error().message;
    return result;
  }
  std::size_t after = 0;
  if (auto files = spool.pending()) after = files->size();
  std::size_t dropped = before + 1 - after;
  FlushResult result = flush_spool(config, spool, sleep);
  result.dropped = dropped;
  return result;
}

namespace {

struct Download {
  std::string body;
  std::size_t max_bytes = 0;
  bool too_large = false;
};

std::size_t keep_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* download = static_cast<Download*>(user);
  std::size_t bytes = size * count;
  if (download->body.size() + bytes > download->max_bytes) {
    download->too_large = true;
    return 0; // aborts the transfer
  }
  download->body.append(data, bytes);
  return bytes;
}

} // namespace

util::Result<std::string> http_get(const std::string& url, std::chrono::milliseconds timeout, std::size_t max_bytes) {
  const auto& api = curl_api();
  if (!api) return api.error();
  UrlTarget target = NVTE_TRY(parse_url(url));
  CurlHandle curl(api->easy_init());
  if (!curl) return util::make_error(util::ErrorKind::io, "libcurl could not create a handle");
  Download download{{}, max_bytes, false};
  char error[CURL_ERROR_SIZE] = {};
  api->easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  if (allow_only_http(*api, curl.get()) != CURLE_OK)
    return util::make_error(util::ErrorKind::io, "libcurl cannot be limited to http and https");
  api->easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 0L);
  if (target.loopback) api->easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");
  api->easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  api->easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  api->easy_setopt(curl.get(), CURLOPT_SSL_VERIFYPEER, 1L);
  api->easy_setopt(curl.get(), CURLOPT_SSL_VERIFYHOST, 2L);
  api->easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, std::min<long>(10000L, static_cast<long>(timeout.count())));
  api->easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  api->easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, keep_body);
  api->easy_setopt(curl.get(), CURLOPT_WRITEDATA, &download);
  api->easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  CURLcode code = api->easy_perform(curl.get());
  if (download.too_large)
    return util::make_error(util::ErrorKind::invalid, url + ": larger than " + std::to_string(max_bytes) + " bytes");
  if (code != CURLE_OK) {
    std::string why = error[0] ? error : api->easy_strerror(code);
    auto kind = code == CURLE_OPERATION_TIMEDOUT ? util::ErrorKind::timeout : util::ErrorKind::io;
    return util::make_error(kind, "cannot download " + url + ": " + why);
  }
  long status = 0;
  api->easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status >= 300 && status <= 399) {
    char* location = nullptr;
    api->easy_getinfo(curl.get(), CURLINFO_REDIRECT_URL, &location);
    return util::make_error(util::ErrorKind::invalid, "cannot download " + redirect_error(url, status, location));
  }
  return std::move(download.body);
}

} // namespace service
