// libcurl, dlopen'd once per process (internal to src/service): the entry points push, http_get
// and the URL policy use. Linked, libcurl's ~30 dependent libraries would cost every
// `nvte-doctor` process about 6 ms of start-up (docs/service.md); <curl/curl.h> gives the types.
#pragma once

#include "util/dl.hpp"
#include "util/result.hpp"

#include <curl/curl.h>

#include <memory>

namespace service {

struct CurlApi {
  util::DlLibrary library;
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
  // The URL API (libcurl >= 7.62): the URL policy parses with the parser that connects.
  decltype(&curl_url) url = nullptr;
  decltype(&curl_url_set) url_set = nullptr;
  decltype(&curl_url_get) url_get = nullptr;
  decltype(&curl_url_cleanup) url_cleanup = nullptr;
  decltype(&curl_free) free = nullptr;
};

// Limits a handle to http and https. CURLOPT_PROTOCOLS_STR came with libcurl 7.85; an older one
// (bullseye's 7.74, Ubuntu 22.04's 7.81: where the portable build runs) answers
// CURLE_UNKNOWN_OPTION, and then gets CURLOPT_PROTOCOLS, the bitmask that option replaced. The
// option numbers are spelled here, so the code builds against the headers of either (the portable
// build compiles with bullseye's). Anything but CURLE_OK: the handle must not be used.
CURLcode allow_only_http(const CurlApi& api, CURL* handle);

// The process's libcurl, loaded on first use and never unloaded (curl_global_cleanup is not safe
// while other threads may use it); not_installed naming the sonames tried when it is missing.
const util::Result<CurlApi>& curl_api();

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_api()->easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_api()->slist_free_all(list); }
};
struct UrlDeleter {
  void operator()(CURLU* url) const { curl_api()->url_cleanup(url); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using CurlList = std::unique_ptr<curl_slist, SlistDeleter>;
using CurlUrl = std::unique_ptr<CURLU, UrlDeleter>;

} // namespace service
