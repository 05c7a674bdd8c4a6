// Fuzz target: signed rules bundles (service::unpack_bundle). The input is tried twice: as a whole
// bundle (header parser, length check, signature rejection), and as a payload that this target
// signs with a fixed key, so the payload parser behind the signature check is reached as well.
#include "fuzz_common.hpp"
#include "service/bundle.hpp"

#include <sodium.h>

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto keys = [] {
    if (::sodium_init() < 0) std::abort();
    unsigned char seed[crypto_sign_SEEDBYTES] = {7};
    std::string pk(crypto_sign_PUBLICKEYBYTES, '\0'), sk(crypto_sign_SECRETKEYBYTES, '\0');
    ::crypto_sign_seed_keypair(reinterpret_cast<unsigned char*>(pk.data()), reinterpret_cast<unsigned char*>(sk.data()), seed);
    return std::pair<std::vector<std::string>, std::string>{{pk}, sk};
  }();
  std::string_view input = fuzz::as_text(data, size);
  (void)service::unpack_bundle(input, keys.first, "fuzz");

  std::string signature(crypto_sign_BYTES, '\0');
  ::crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr, data, size,
                         reinterpret_cast<const unsigned char*>(keys.second.data()));
  std::string hex(signature.size() * 2 + 1, '\0');
  ::sodium_bin2hex(hex.data(), hex.size(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size());
  hex.pop_back();
  // Both formats: 2 (serial and creation time first in the payload) and 1 (files only).
  for (const char* magic : {"nvte-doctor-rules-bundle 2", "nvte-doctor-rules-bundle 1"}) {
    std::string bundle = std::string(magic) + "\nkey-id 0000000000000000\nsignature " + hex + "\nlength " +
                         std::to_string(size) + "\n\n" + std::string(input);
    auto unpacked = service::unpack_bundle(bundle, keys.first, "fuzz");
    if (unpacked.ok() && unpacked->files.empty()) std::abort();
  }
  return 0;
}
