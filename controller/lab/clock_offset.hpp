#pragma once
// How an agent's monotonic clock stands to the controller's, from clock probes on its stream
// (NTP's way): the controller writes its time t1, the agent reads the probe at t2 and answers
// at t3 (its clock), the controller reads the answer at t4. The agent's clock is then
// offset = ((t2 - t1) + (t3 - t4)) / 2 ahead of the controller's, within ± delay / 2
// (delay = (t4 - t1) - (t3 - t2), the round trip on the wire): whatever the one-way delays
// are, the answer's true offset lies in that interval. The sample with the least delay is the
// one used (a probe held up by a busy thread or a queue is a wider interval, not a wrong one).
#include <cstdint>
#include <optional>

#include "loadlab/v1/agent.pb.h"

namespace loadlab::controller {

// The controller's monotonic clock (steady_clock), in ns.
int64_t controller_now_ns();

class ClockOffset {
 public:
  // An echo of a probe, read at `read_ns` (the controller's clock).
  void add(const v1::ClockEcho& echo, int64_t read_ns);
  bool known() const { return best_.has_value(); }
  size_t samples() const { return samples_; }
  // The agent's clock minus the controller's (0 until known).
  int64_t offset_ns() const { return best_ ? best_->offset : 0; }
  // The most the true offset can be off offset_ns(): half the round trip of the sample used.
  int64_t uncertainty_ns() const { return best_ ? best_->delay / 2 : 0; }
  int64_t round_trip_ns() const { return best_ ? best_->delay : 0; }
  // The round trip of the latest sample: what a message to the agent takes now (a loaded
  // machine's, when its workers warm up), not at best.
  int64_t last_round_trip_ns() const { return last_delay_; }
  int64_t to_agent(int64_t controller_ns) const { return controller_ns + offset_ns(); }
  int64_t to_controller(int64_t agent_ns) const { return agent_ns - offset_ns(); }

 private:
  struct Sample {
    int64_t offset = 0;
    int64_t delay = 0;
  };
  std::optional<Sample> best_;
  int64_t last_delay_ = 0;
  size_t samples_ = 0;
};

}  // namespace loadlab::controller
