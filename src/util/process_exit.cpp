#include "util/process_exit.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <vector>

namespace util {

namespace {

struct Kept {
  std::mutex mutex;
  std::vector<std::shared_ptr<const void>> objects;
  bool long_lived = false;
};

Kept& kept() {
  static Kept k; // freed only when the process ends some other way (a test binary's exit)
  return k;
}

} // namespace

void keep_until_exit(std::shared_ptr<const void> object) {
  auto& k = kept();
  std::lock_guard lock(k.mutex);
  if (!k.long_lived) k.objects.push_back(std::move(object));
}

void set_long_lived() {
  auto& k = kept();
  std::lock_guard lock(k.mutex);
  k.long_lived = true;
  k.objects.clear();
}

void exit_process(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__)
  // LeakSanitizer checks at exit(): the sanitized build frees what was kept and lets it look.
  std::exit(code);
#else
  std::_Exit(code);
#endif
}

} // namespace util
