#include "cpu_burn.hpp"

#include <time.h>

#include <cstdint>

namespace loadlab::target {

namespace {

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

void burn_cpu(std::chrono::microseconds work) {
  if (work.count() <= 0) return;
  const std::int64_t end = thread_cpu_ns() + work.count() * 1000;
  // A dependent multiply chain between clock reads: real arithmetic the compiler must keep,
  // and few enough clock reads (a system call each) that most of the time is user time.
  std::uint64_t x = static_cast<std::uint64_t>(end);
  do {
    for (int i = 0; i < 512; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  } while (thread_cpu_ns() < end);
}

}  // namespace loadlab::target
