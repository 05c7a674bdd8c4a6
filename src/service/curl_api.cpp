// Loads libcurl by soname (OpenSSL, GnuTLS or NSS flavour, whichever the node has) and binds the
// entry points of curl_api.hpp; a missing symbol is an error naming it.
#include "service/curl_api.hpp"

#include <string>
#include <type_traits>

namespace service {

namespace {

util::Result<CurlApi> load_curl() {
  util::Result<util::DlLibrary> opened = util::make_error(util::ErrorKind::not_installed, "");
  std::string tried;
  for (const char* soname : {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4"}) {
    opened = util::DlLibrary::open(soname);
    if (opened) break;
    tried += std::string(tried.empty() ? "" : "; ") + opened.error().message;
  }
  if (!opened) return util::make_error(util::ErrorKind::not_installed, "push needs libcurl (Debian: libcurl4): " + tried);
  CurlApi api;
  api.library = std::move(*opened);
  auto bind = [&](auto& fn, const char* name) -> util::Result<void> {
    void* address = NVTE_TRY(api.library.symbol(name));
    fn = util::function_cast<std::remove_reference_t<decltype(fn)>>(address);
    return {};
  };
  NVTE_TRY_VOID(bind(api.global_init, "curl_global_init"));
  NVTE_TRY_VOID(bind(api.easy_init, "curl_easy_init"));
  NVTE_TRY_VOID(bind(api.easy_setopt, "curl_easy_setopt"));
  NVTE_TRY_VOID(bind(api.easy_perform, "curl_easy_perform"));
  NVTE_TRY_VOID(bind(api.easy_getinfo, "curl_easy_getinfo"));
  NVTE_TRY_VOID(bind(api.easy_cleanup, "curl_easy_cleanup"));
  NVTE_TRY_VOID(bind(api.easy_strerror, "curl_easy_strerror"));
  NVTE_TRY_VOID(bind(api.slist_append, "curl_slist_append"));
  NVTE_TRY_VOID(bind(api.slist_free_all, "curl_slist_free_all"));
  NVTE_TRY_VOID(bind(api.url, "curl_url"));
  NVTE_TRY_VOID(bind(api.url_set, "curl_url_set"));
  NVTE_TRY_VOID(bind(api.url_get, "curl_url_get"));
  NVTE_TRY_VOID(bind(api.url_cleanup, "curl_url_cleanup"));
  NVTE_TRY_VOID(bind(api.free, "curl_free"));
  if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    return util::make_error(util::ErrorKind::io, "curl_global_init failed in " + api.library.loaded_path());
  }
  return api;
}

} // namespace

CURLcode allow_only_http(const CurlApi& api, CURL* handle) {
  constexpr auto k_protocols_str = static_cast<CURLoption>(10000 + 318); // CURLOPT_PROTOCOLS_STR, a string
  constexpr auto k_protocols = static_cast<CURLoption>(181);             // CURLOPT_PROTOCOLS, a long
  constexpr long k_http_https = 1L | 2L;                                 // CURLPROTO_HTTP | CURLPROTO_HTTPS
#if LIBCURL_VERSION_NUM >= 0x075500
  static_assert(k_protocols_str == CURLOPT_PROTOCOLS_STR);
#endif
  CURLcode done = api.easy_setopt(handle, k_protocols_str, "http,https");
  if (done == CURLE_UNKNOWN_OPTION) done = api.easy_setopt(handle, k_protocols, k_http_https);
  return done;
}

const util::Result<CurlApi>& curl_api() {
  static const util::Result<CurlApi> api = load_curl();
  return api;
}

} // namespace service
