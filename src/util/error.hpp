// Errors as values. A failure kind callers branch on, plus a message written for the user that
// already carries its context (file, line, library, dlerror()).
#pragma once

#include <string>
#include <string_view>

namespace util {

enum class ErrorKind {
  not_found,      // a file, library, symbol or key that is not there
  not_installed,  // a vendor library or package absent from the node
  symbol_missing, // a library is there but lacks an entry point we need
  permission,     // EACCES / EPERM
  parse,          // malformed input: YAML, JSON, a version string, an expression
  invalid,        // well-formed input with a value that makes no sense
  io,             // a read or write that failed for another reason
  driver_error,   // a vendor call returned an error code
  timeout,        // a bounded operation ran past its limit
  crashed,        // a child process died by a signal
  unsupported,    // a version or feature this build does not know
};

std::string_view to_string(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::invalid;
  std::string message;
};

inline Error make_error(ErrorKind kind, std::string message) { return Error{kind, std::move(message)}; }

// The one exception of the program: thrown to exit with code 3 (UNKNOWN) and a one-line reason.
// Caught in main only.
struct Fatal {
  std::string message;
};

} // namespace util
