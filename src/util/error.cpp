#include "util/error.hpp"

namespace util {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::not_found: return "not_found";
  case ErrorKind::not_installed: return "not_installed";
  case ErrorKind::symbol_missing: return "symbol_missing";
  case ErrorKind::permission: return "permission";
  case ErrorKind::parse: return "parse";
  case ErrorKind::invalid: return "invalid";
  case ErrorKind::io: return "io";
  case ErrorKind::driver_error: return "driver_error";
  case ErrorKind::timeout: return "timeout";
  case ErrorKind::crashed: return "crashed";
  case ErrorKind::unsupported: return "unsupported";
  }
  return "unknown";
}

} // namespace util
