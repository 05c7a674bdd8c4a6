// A parallel for over indices, for CPU-bound work that splits into independent items (the native
// probe's symbol lookups: tens of thousands of hash-table lookups over a few large objects). The
// caller's thread takes part; items are handed out one at a time from a shared counter, so a few
// large items do not leave threads idle. Results go where fn(i) puts them: by index, so the
// outcome does not depend on the schedule.
#pragma once

#include <cstddef>
#include <functional>

namespace util {

// The CPUs this process may run on (its affinity mask: a Slurm or cgroup CPU set, not the
// machine's count), at least 1; NVTE_DOCTOR_THREADS=N caps it (a prolog that keeps to one core,
// a fuzzer that runs one process per core). With 1, callers start no thread at all.
unsigned available_cpus();
// cpus capped by the text of NVTE_DOCTOR_THREADS (nullptr: unset); text that is not a count of
// at least 1 is ignored.
unsigned capped_cpus(unsigned cpus, const char* cap);

// Calls fn(i) for every i in [0, count) on up to max_threads threads (the caller's included);
// returns when all calls have returned. With max_threads <= 1 or count <= 1 it runs in order on
// the caller's thread; where no thread can be started (a pids limit), the ones that could and the
// caller's share the items.
// fn may throw: no exception leaves the thread it was thrown on. Once a call throws, no item
// after it is started; when every started call has returned, the exception of the lowest index
// that threw is rethrown on the caller's thread. That is the one a loop in order would have
// thrown, whatever the schedule: items are handed out in order, so every lower index had started.
void parallel_for(std::size_t count, unsigned max_threads, const std::function<void(std::size_t)>& fn);

} // namespace util
