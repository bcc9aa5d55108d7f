#pragma once
// The request slots of a connection that carries several requests at once, as streams
// (H2Connection, H3Connection): which slots are free, which requests wait for the connection
// (queued) and how many are on it (open), and the loop that begins requests, closed or open
// (--rate), shared by both protocols so they pace and budget alike. `Slot` has `state`
// (kFree, kQueued, kOpen), `origin` and `measured`. Lives on its worker's thread.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "run_plan.hpp"
#include "worker.hpp"

namespace loadlab::load {

template <class Slot>
struct StreamSlots {
  // `n`: the streams a connection keeps; the slots never move (streams point into them).
  explicit StreamSlots(std::size_t n) : slots_(n) {
    free_.reserve(n);
    for (int i = static_cast<int>(n) - 1; i >= 0; --i) free_.push_back(i);
    queued.reserve(n);
  }

  Slot& operator[](int i) { return slots_[static_cast<std::size_t>(i)]; }
  auto begin() { return slots_.begin(); }
  auto end() { return slots_.end(); }
  int index_of(const Slot& slot) const { return static_cast<int>(&slot - slots_.data()); }

  // Begins the requests that free slots can take now, queued for the connection: in closed
  // loop as many as slots are free, in open loop the ones whose time has come among the
  // worker's slots, taken one at a time (else the connection `lane` waits in the worker for
  // the one it took). `done` once
  // nothing more will be begun (the window ended, the budget is spent, a stop).
  void fill(Worker& worker, int lane, Clock::time_point now, bool stopped) {
    const RunPlan& plan = worker.plan();
    while (!free_.empty() && !done) {
      if (stopped || worker.stopping()) {
        done = true;
        break;
      }
      // --no-keepalive: one request per connection.
      if (!plan.keep_alive && (open > 0 || !queued.empty() || carried > 0)) break;
      Clock::time_point origin = now;
      if (!worker.open_loop()) {
        if (plan.measure_end() && now >= *plan.measure_end()) {
          done = true;
          break;
        }
      } else {
        if (!slot) slot = worker.take_slot();
        origin = *slot;
        if (plan.measure_end() && origin >= *plan.measure_end()) {
          done = true;
          break;
        }
        if (!worker.slot_due(origin, now)) {
          if (!waiting) {
            waiting = true;
            worker.wait_for_slot(origin, lane);
          }
          break;
        }
        slot.reset();
      }
      const bool measured = origin >= plan.measure_start();
      // A slot begun early (--pace-granularity): its ticket is dated at its slot.
      if (measured && !worker.take_ticket(std::max(origin, now))) {
        done = true;
        break;
      }
      int i = free_.back();
      free_.pop_back();
      Slot& s = slots_[static_cast<std::size_t>(i)];
      s = Slot{};
      s.state = Slot::State::kQueued;
      s.origin = Worker::latency_origin(origin, now);  // begun early: from now, its connect or submission
      s.measured = measured;
      queued.push_back(i);
    }
  }

  // Puts the queued requests on the connection, in order, while `submit(slot)` takes them.
  template <class Submit>
  void submit_queued(Submit submit) {
    std::size_t n = 0;
    while (n < queued.size() && submit(slots_[static_cast<std::size_t>(queued[n])])) ++n;
    queued.erase(queued.begin(), queued.begin() + static_cast<std::ptrdiff_t>(n));
  }

  // An open request goes back to the queue, at its end (sent again on another stream).
  void requeue(Slot& s) {
    if (s.state == Slot::State::kOpen) --open;
    s.state = Slot::State::kQueued;
    queued.push_back(index_of(s));
  }

  // A stop: nothing more is begun, and the requests queued are discarded (cut short by us, not
  // by the target).
  void discard_queued() {
    done = true;
    waiting = false;
    for (int i : queued) release(slots_[static_cast<std::size_t>(i)]);
    queued.clear();
  }

  void release(Slot& s) {
    if (s.state == Slot::State::kOpen) --open;
    s.state = Slot::State::kFree;
    free_.push_back(index_of(s));
  }

  std::vector<int> queued;                // indices of queued slots, in the order they were begun
  int open = 0;                           // slots in kOpen
  std::optional<Clock::time_point> slot;  // open loop: the worker's slot taken, not yet begun
  int64_t carried = 0;                    // requests submitted on the current connection
  bool waiting = false;                   // open loop: in the worker's waiters until its slot
  bool done = false;                      // no request will be begun any more

 private:
  std::vector<Slot> slots_;  // never resized
  std::vector<int> free_;
};

}  // namespace loadlab::load
