#include "util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <sched.h>
#include <system_error>
#include <thread>
#include <vector>

namespace util {

unsigned available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t count, unsigned max_threads, const std::function<void(std::size_t)>& fn) {
  std::size_t threads = std::min<std::size_t>(max_threads, count);
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next.fetch_add(1, std::memory_order_relaxed); i < count; i = next.fetch_add(1, std::memory_order_relaxed)) fn(i);
  };
  std::vector<std::jthread> helpers; // joined when it goes
  try {
    for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had (a container's pids limit): those started and this one share the
    // items all the same.
  }
  work();
}

} // namespace util
