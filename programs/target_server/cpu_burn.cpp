#include "cpu_burn.hpp"

#include <time.h>

#include <cstdint>

namespace loadlab::target {

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Spins until the wall clock (vDSO, tens of ns a read) reaches `end`: a dependent multiply chain
// the compiler must keep, 32 steps (a few tens of ns) between reads.
void spin_until(Clock::time_point end, std::uint64_t& x) {
  do {
    for (int i = 0; i < 32; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  } while (Clock::now() < end);
}

}  // namespace

void burn_cpu(std::chrono::nanoseconds work) {
  if (work.count() <= 0) return;
  std::uint64_t x = static_cast<std::uint64_t>(work.count());
  if (work < kCpuClockedWork) {
    spin_until(Clock::now() + work, x);
    return;
  }
  // The wall clock never runs slower than the thread's CPU clock: spin by it for what is left,
  // then ask the CPU clock how much was used (less when the thread was preempted), and again.
  const std::int64_t end = thread_cpu_ns() + work.count();
  for (std::int64_t left = work.count(); left > 0; left = end - thread_cpu_ns())
    spin_until(Clock::now() + std::chrono::nanoseconds(left), x);
}

}  // namespace loadlab::target
