// Result<T>: a value or an Error. A small local type because clang 14 (fuzzers) cannot use
// std::expected with Debian 12's libstdc++.
#pragma once

#include "util/error.hpp"

#include <cassert>
#include <optional>
#include <utility>
#include <variant>

namespace util {

template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : m_data(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : m_data(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return m_data.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(m_data); }
  const T& value() const& { assert(ok()); return std::get<0>(m_data); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(m_data)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(m_data); }
  Error&& take_error() { assert(!ok()); return std::get<1>(std::move(m_data)); }

  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

private:
  std::variant<T, Error> m_data;
};

template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : m_error(std::move(error)) {}
  bool ok() const { return !m_error.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { assert(!ok()); return *m_error; }
  Error&& take_error() { assert(!ok()); return std::move(*m_error); }

private:
  std::optional<Error> m_error;
};

} // namespace util

// Propagates the error of a Result-returning expression; otherwise yields its value.
#define NVTE_TRY(expr)                                                                                 \
  __extension__({                                                                                                   \
    auto _nvte_result = (expr);                                                                        \
    if (!_nvte_result.ok()) return _nvte_result.take_error();                                          \
    std::move(_nvte_result).value();                                                                   \
  })

// Propagates the error of a Result<void>-returning expression.
#define NVTE_TRY_VOID(expr)                                                                            \
  do {                                                                                                 \
    auto _nvte_result = (expr);                                                                        \
    if (!_nvte_result.ok()) return _nvte_result.take_error();                                          \
  } while (false)
