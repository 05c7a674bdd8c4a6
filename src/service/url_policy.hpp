// The one URL policy of every network use (rules update downloads, push): https anywhere, plain
// http only to this host. The decision is made on the host libcurl will connect to, as libcurl's
// own URL parser (curl_url) reads it, never on a prefix of the text: in
// "http://localhost:@remote/" the user information is "localhost:" and the host is "remote".
#pragma once

#include "util/result.hpp"

#include <string>
#include <string_view>

namespace service {

// A URL as libcurl will use it.
struct UrlTarget {
  std::string scheme; // "https" or "http", lower case
  std::string host;   // the host libcurl connects to: "127.0.0.1", "::1" (no brackets), "example.org"
  bool loopback = false; // is_loopback_host(host)
};

// True for "localhost" (libcurl resolves it to the loopback itself, never through DNS), a
// literal IPv4 address in 127.0.0.0/8 in dotted-quad form, and the literal IPv6 "::1". A name
// that merely starts with "127." ("127.attacker.example") is not.
bool is_loopback_host(std::string_view host);

// Parses url with libcurl's URL API. Fails (invalid) on a URL libcurl cannot parse, a scheme
// other than http or https, or a URL without a host; (not_installed) without libcurl.
util::Result<UrlTarget> parse_url(const std::string& url);

// parse_url, then the policy: https to any host, http only to a loopback host. purpose says in
// the refusal what needed the protection ("rules updates", "the push token").
util::Result<UrlTarget> require_secure_url(const std::string& url, std::string_view purpose);

// "HTTP 302: the server redirects to <location>; redirects are not followed (use that URL
// directly if it is trusted)", for the errors of every request (redirects are off everywhere).
std::string redirect_error(const std::string& url, long status, const char* location);

} // namespace service
