#include "util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <sched.h>
#include <system_error>
#include <thread>
#include <vector>

namespace util {

unsigned available_cpus() {
  static const unsigned cpus = [] {
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) == 0) n = static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
    return capped_cpus(n, std::getenv("NVTE_DOCTOR_THREADS"));
  }();
  return cpus;
}

unsigned capped_cpus(unsigned cpus, const char* cap) {
  if (!cap) return cpus;
  char* end = nullptr;
  unsigned long v = std::strtoul(cap, &end, 10);
  if (end == cap || *end != '\0' || v < 1) return cpus; // not a count: ignored, as an unset one
  return static_cast<unsigned>(std::min<unsigned long>(cpus, v));
}

void parallel_for(std::size_t count, unsigned max_threads, const std::function<void(std::size_t)>& fn) {
  std::size_t threads = std::min<std::size_t>(max_threads, count);
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  // The lowest index that threw (count: none yet) and its exception. A thread that threw takes no
  // more items, nor does any other once the next item is past a failure.
  std::atomic<std::size_t> failed{count};
  std::exception_ptr first;
  std::mutex mutex;
  auto work = [&]() noexcept {
    for (std::size_t i = next.fetch_add(1, std::memory_order_relaxed); i < count && i < failed.load();
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (i < failed.load()) {
          failed.store(i);
          first = std::current_exception();
        }
        return;
      }
    }
  };
  {
    std::vector<std::jthread> helpers; // joined when it goes
    try {
      for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
    } catch (const std::system_error&) {
      // No more threads to be had (a container's pids limit): those started and this one share the
      // items all the same.
    }
    work();
  }
  if (first) std::rethrow_exception(first);
}

} // namespace util
