#pragma once
// Consumes CPU on the calling thread, for the `work-us` knob.
#include <chrono>

namespace loadlab::target {

// Work below this is timed by the wall clock alone; from it on, by the thread's CPU clock too.
inline constexpr auto kCpuClockedWork = std::chrono::microseconds(100);

// Spins on the calling thread (an io thread) for `work` of CPU time. From kCpuClockedWork on, the
// thread's own CPU clock decides, so time spent preempted does not count and the figure holds on
// a busy machine. Shorter work is timed by the wall clock only: reading the thread's CPU clock is
// a system call (1.4 us on a VM, which would be most of a 1 us burn), and a preemption inside so
// short a spin is rare (it shortens that one burn).
void burn_cpu(std::chrono::nanoseconds work);

}  // namespace loadlab::target
