// The URL policy (url_policy.hpp). Only literal addresses count as loopback: a name other than
// "localhost" goes through DNS, and DNS is what an attacker on the network controls.
#include "service/url_policy.hpp"

#include "service/curl_api.hpp"
#include "util/strings.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace service {

bool is_loopback_host(std::string_view host) {
  std::string lower(host);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "localhost") return true;
  if (lower.size() > 2 && lower.front() == '[' && lower.back() == ']') lower = lower.substr(1, lower.size() - 2);
  in_addr v4{};
  // inet_pton takes only the dotted quad: "127.1", "0x7f.0.0.1" and "2130706433" are refused.
  if (::inet_pton(AF_INET, lower.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, lower.c_str(), &v6) == 1) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  return false;
}

util::Result<UrlTarget> parse_url(const std::string& url) {
  const auto& api = curl_api();
  if (!api) return api.error();
  CurlUrl handle(api->url());
  if (!handle) return util::make_error(util::ErrorKind::io, "curl_url failed");
  if (CURLUcode rc = api->url_set(handle.get(), CURLUPART_URL, url.c_str(), 0); rc != CURLUE_OK)
    return util::make_error(util::ErrorKind::invalid, "not a URL libcurl accepts: " + url + " (URL API error " +
                                                          std::to_string(static_cast<int>(rc)) + ")");
  auto part = [&](CURLUPart which) -> std::string {
    char* text = nullptr;
    if (api->url_get(handle.get(), which, &text, 0) != CURLUE_OK || !text) return {};
    std::string out = text;
    api->free(text);
    return out;
  };
  UrlTarget target;
  target.scheme = part(CURLUPART_SCHEME);
  std::transform(target.scheme.begin(), target.scheme.end(), target.scheme.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  target.host = part(CURLUPART_HOST);
  if (target.scheme != "http" && target.scheme != "https")
    return util::make_error(util::ErrorKind::invalid, "refusing " + url + ": only http:// and https:// URLs are used");
  if (target.host.empty()) return util::make_error(util::ErrorKind::invalid, "refusing " + url + ": no host");
  if (target.host.size() > 2 && target.host.front() == '[' && target.host.back() == ']')
    target.host = target.host.substr(1, target.host.size() - 2);
  target.loopback = is_loopback_host(target.host);
  return target;
}

util::Result<UrlTarget> require_secure_url(const std::string& url, std::string_view purpose) {
  UrlTarget target = NVTE_TRY(parse_url(url));
  if (target.scheme == "http" && !target.loopback)
    return util::make_error(util::ErrorKind::invalid, "refusing " + url + ": " + std::string(purpose) +
                                                          " use https:// (plain http only to 127.0.0.0/8, ::1 or localhost; "
                                                          "this URL connects to " + target.host + ")");
  return target;
}

std::string redirect_error(const std::string& url, long status, const char* location) {
  return url + ": HTTP " + std::to_string(status) + ": the server redirects" +
         (location && *location ? std::string(" to ") + location : std::string()) +
         "; redirects are not followed (use the final URL directly if it is trusted)";
}

} // namespace service
