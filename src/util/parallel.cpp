#include "util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
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

void parallel_expand(std::vector<std::string> start, unsigned max_threads,
                     const std::function<void(const std::string& item, const std::function<void(std::string)>& add)>& fn) {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> queue(std::make_move_iterator(start.begin()), std::make_move_iterator(start.end()));
  std::size_t running = 0; // calls of fn in progress: they may still add items
  auto add = [&](std::string item) {
    {
      std::lock_guard lock(mutex);
      queue.push_back(std::move(item));
    }
    changed.notify_one();
  };
  auto work = [&] {
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return !queue.empty() || running == 0; });
      if (queue.empty()) return; // and nothing running: done
      std::string item = std::move(queue.front());
      queue.pop_front();
      ++running;
      lock.unlock();
      fn(item, add);
      lock.lock();
      if (--running == 0 && queue.empty()) changed.notify_all();
    }
  };
  std::vector<std::jthread> helpers;
  try {
    for (unsigned t = 1; t < max_threads; ++t) helpers.emplace_back(work);
  } catch (const std::system_error&) {
    // As in parallel_for: the threads that started and this one do the work.
  }
  work();
}

} // namespace util
