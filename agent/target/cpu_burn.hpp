#pragma once
// Consumes CPU on the calling thread, for the `work-us` knob.
#include <chrono>

namespace loadlab::target {

// Spins until the calling thread has used `work` of CPU time (its own CPU clock, so time spent
// preempted does not count and the figure holds on a busy machine). Called on an io thread.
void burn_cpu(std::chrono::microseconds work);

}  // namespace loadlab::target
