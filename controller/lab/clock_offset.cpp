#include "lab/clock_offset.hpp"

#include <algorithm>
#include <chrono>

namespace loadlab::controller {

int64_t controller_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ClockOffset::add(const v1::ClockEcho& echo, int64_t read_ns) {
  const int64_t t1 = echo.controller_ns(), t2 = echo.received_ns(), t3 = echo.sent_ns(), t4 = read_ns;
  if (t4 < t1 || t3 < t2) return;  // not an answer to a probe of this clock
  Sample s;
  // Halves first: the sums of two clocks' readings could overflow.
  s.offset = (t2 - t1) / 2 + (t3 - t4) / 2;
  s.delay = std::max<int64_t>(0, (t4 - t1) - (t3 - t2));
  ++samples_;
  last_delay_ = s.delay;
  if (!best_ || s.delay < best_->delay) best_ = s;
}

}  // namespace loadlab::controller
