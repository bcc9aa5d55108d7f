#pragma once
// What the h2 fuzz target shares between inputs: one io thread's worth of a target server, made
// once per process. An input makes one connection on it, runs it to its end and checks that the
// environment is back at rest (nothing in flight, nothing left on the io_context).
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "canned_responses.hpp"
#include "io_worker.hpp"
#include "session_env.hpp"
#include "stall.hpp"
#include "stream_responder.hpp"

namespace loadlab::target {

// The fuzz targets' way into a connection's StreamResponder (its friend): time moved on without
// waiting for it.
struct StreamResponderPeer {
  using Clock = std::chrono::steady_clock;

  // How far time must move for the last pending delay to be due (zero when none is pending).
  template <class Responder>
  static Clock::duration until_last_wake(const Responder& r) {
    auto copy = r.wakes_;
    auto last = Clock::time_point::min();
    for (; !copy.empty(); copy.pop()) last = std::max(last, copy.top().at);
    if (last == Clock::time_point::min()) return Clock::duration::zero();
    return std::max(Clock::duration::zero(), last - Clock::now()) + std::chrono::microseconds(1);
  }

  // `d` passes: every stream's start and every wake move back by d, and the timer is armed again
  // at the earliest wake (its handler, production's, decides). True: a request is incomplete.
  template <class Responder>
  static bool jump(Responder& r, Clock::duration d) {
    for (auto& slot : r.slots_) slot->started -= d;
    decltype(r.wakes_) moved;
    for (; !r.wakes_.empty(); r.wakes_.pop()) {
      auto w = r.wakes_.top();
      w.at -= d;
      moved.push(w);
    }
    r.wakes_ = std::move(moved);
    if (!r.wakes_.empty()) r.arm_timer(r.wakes_.top().at);
    return r.in_state(RequestStream::State::receiving) != 0;
  }
};

}  // namespace loadlab::target

namespace loadlab::fuzz {

struct TargetEnv {
  target::IoWorkers workers;
  target::IoWorker& worker;
  target::CannedResponses responses{"loadlab-target fuzz body\n", 200};
  // Off: a stall latches the first request's time for the whole process (state across inputs).
  target::Stall stall;
  std::atomic<bool> stopping{false};
  std::atomic<std::int64_t> in_flight{0};
  std::shared_ptr<spdlog::logger> log =
      std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_st>());
  target::SessionEnv env;

  TargetEnv() : worker(*workers.emplace_back(std::make_unique<target::IoWorker>())) {
    log->set_level(spdlog::level::off);
    env.responses = &responses;
    env.stall = &stall;
    env.stopping = &stopping;
    env.in_flight = &in_flight;
    env.workers = &workers;
    env.log = log.get();
    // Small limits, so that 413, 431 and the header flood are within reach of a few KB of input.
    env.header_limit = 1024;
    env.body_limit = 1024;
    // env.delay and env.work stay 0: every delay and every CPU ask comes from a knob of the input.
  }

  // Before an input: counters at 0, so that a stats body does not depend on earlier inputs.
  void begin() {
    for (auto* c : {&worker.responses_sent, &worker.connections, &worker.tls_handshakes, &worker.tls_resumed,
                    &worker.h2_connections, &worker.h2_streams, &worker.h3_connections, &worker.h3_streams,
                    &worker.h3_resumed, &worker.h3_early_data})
      c->store(0, std::memory_order_relaxed);
    worker.ioc.restart();
  }

  // Runs every ready handler, never blocks; how many ran.
  std::size_t run_ready() {
    std::size_t n = 0;
    for (;;) {
      if (worker.ioc.stopped()) worker.ioc.restart();
      const auto k = worker.ioc.poll();
      if (k == 0) return n;
      n += k;
    }
  }

  // After an input: the connection took every request it counted back out of in_flight.
  void end() {
    run_ready();
    if (in_flight.load() != 0) std::abort();
  }
};

// Never destroyed: no teardown order at exit.
inline TargetEnv& target_env() {
  static auto* env = new TargetEnv;
  return *env;
}

}  // namespace loadlab::fuzz
