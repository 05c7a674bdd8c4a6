// Defer: runs a callable when the scope ends, for one-off C clean-ups.
#pragma once

#include <utility>

namespace util {

template <typename F> class Defer {
public:
  explicit Defer(F f) : m_f(std::move(f)) {}
  Defer(const Defer&) = delete;
  Defer& operator=(const Defer&) = delete;
  ~Defer() { m_f(); }

private:
  F m_f;
};

} // namespace util
