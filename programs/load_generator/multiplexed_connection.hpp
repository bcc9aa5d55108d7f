#pragma once
// What the connections that carry several requests at once, each on a stream of its own
// (H2Connection, H3Connection), do alike whatever their protocol: the request slots and their
// loop (stream_slots.hpp), the connection's states, the start, stop and resume the worker
// calls, and the bookkeeping of a request put on a stream, answered, past --timeout or cut
// short with its connection. The protocol class derives from it (CRTP, no virtual call per
// request) and gives:
//   void do_connect();                        connect (and handshake); the queued requests wait
//   void pump();                              fill_slots(), then what its state asks
//   bool submit(Slot&, Clock::time_point);    put a queued request on a new stream, or false
//   void cancel_stream(Slot&);                tell the peer a stream past --timeout is given up
//   void close_connection(std::optional<ErrorKind>);  end the connection (see drop_open)
//   void cut_connect();                       a stop while connecting
//   void close_io();                          close the socket, at the end of the loop
// Lives on its worker's thread; every method runs there. Internal to loadlab_load.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "client_connection.hpp"
#include "load_result.hpp"
#include "loadlab/shared/header_nv.hpp"
#include "run_plan.hpp"
#include "stream_slots.hpp"
#include "worker.hpp"

namespace loadlab::load {

// One request of a multiplexed connection: waiting for the connection (queued) or on a
// stream (open). The protocols add their own fields.
template <class StreamId>
struct StreamRequest {
  enum class State : uint8_t { kFree, kQueued, kOpen };
  State state = State::kFree;
  bool measured = false;
  bool complete = false;  // the response's end of stream came
  bool retried = false;   // sent again after the server left it unprocessed
  int status = 0;
  StreamId stream_id = -1;
  size_t bytes = 0;  // the response's frames (HTTP/2's or HTTP/3's) with their headers
  Clock::time_point origin{}, sent{}, first_byte{}, deadline{};
  RequestCost cost;
};

// The request's header fields as nghttp2 or nghttp3 takes them (their nv structs have the same
// members). They point into the plan, which lives for the whole run: the libraries copy the
// array per request but, with the NO_COPY flags, not the names and values.
template <class Nv>
std::vector<Nv> header_fields(const RunPlan& plan, uint8_t no_copy_flags) {
  std::vector<Nv> fields;
  for (const auto& [name, value] : plan.h2_headers)
    fields.push_back(shared::header_nv<Nv>(name, value, no_copy_flags));
  return fields;
}

template <class Derived, class Slot>
class MultiplexedConnection : public ClientConnection {
 public:
  MultiplexedConnection(const MultiplexedConnection&) = delete;
  MultiplexedConnection& operator=(const MultiplexedConnection&) = delete;

  void start() override {
    if ((preconnect_ = connects_first(worker_))) return self().do_connect();
    self().pump();
  }

  void stop() override {
    if (stopped_) return;
    stopped_ = true;
    slots_.discard_queued();  // and those in flight, below
    switch (state_) {
      case State::kIdle:
        return end();
      case State::kConnecting:
        return self().cut_connect();
      case State::kOpen:
        return self().close_connection(std::nullopt);
      case State::kClosing:
        return;
    }
  }

  void resume(Clock::time_point) override {
    if (!slots_.waiting) return;  // stopped while waiting
    slots_.waiting = false;
    if (!in_pump_) self().pump();  // else the pump under way takes the slot
  }

 protected:
  enum class State : uint8_t { kIdle, kConnecting, kOpen, kClosing };

  // `index`: this connection's place among its worker's connections (its waiter's index).
  MultiplexedConnection(Worker& worker, int index)
      : worker_(worker), index_(index), slots_(static_cast<std::size_t>(worker.plan().streams)) {}
  ~MultiplexedConnection() override = default;

  // A pump's first step: begins the requests free slots can take now (in open loop, after
  // waking the other connections whose slots came). False when no pump may run: the loop
  // ended, or a pump is under way further up the stack.
  bool fill_slots() {
    if (ended_ || in_pump_) return false;
    in_pump_ = true;
    auto now = Clock::now();
    if (worker_.open_loop()) worker_.resume_due(now);
    slots_.fill(worker_, index_, now, stopped_);
    in_pump_ = false;
    return true;
  }

  // The queued requests go on streams, in order, while the protocol's submit takes them.
  void submit_queued() {
    if (slots_.queued.empty()) return;
    auto now = Clock::now();
    slots_.submit_queued([&](Slot& s) { return self().submit(s, now); });
  }

  // The protocol put `s` on stream `id` at `now`; it paid what the connection's queued
  // requests pay (cost_).
  template <class StreamId>
  void opened(Slot& s, StreamId id, Clock::time_point now) {
    s.stream_id = id;
    s.state = Slot::State::kOpen;
    s.sent = now;
    if (!worker_.open_loop()) s.origin = now;  // closed loop: latency from the submission
    s.deadline = now + worker_.plan().timeout;
    s.first_byte = {};
    s.status = 0;
    s.bytes = 0;
    s.complete = false;
    s.cost = cost_;
    ++slots_.open;
    ++slots_.carried;
  }

  // An open connection with nothing left to carry: no stream open, and it drains, or no
  // request will come (none is waiting for a stream), or --no-keepalive's one was sent.
  bool idle_to_close() const {
    return state_ == State::kOpen && slots_.open == 0 &&
           (draining_ || (slots_.done && slots_.queued.empty()) ||
            (!worker_.plan().keep_alive && slots_.carried > 0));
  }

  // When the stream being processed ended: the read that brought it, else now.
  Clock::time_point done_time() const {
    return read_time_ == Clock::time_point{} ? Clock::now() : read_time_;
  }

  // A stream whose response ended whole: recorded, its slot freed.
  void record_complete(Slot& s, Clock::time_point done) {
    worker_.record_response(s.measured, s.origin, s.sent,
                            s.first_byte == Clock::time_point{} ? done : s.first_byte, done, s.status,
                            s.bytes, s.cost);
    slots_.release(s);
  }

  // The streams past --timeout: each is given up (the protocol tells the peer) and fails as a
  // timeout; the connection stays, and the freed slots take new requests.
  void expire_streams(Clock::time_point now) {
    bool expired = false;
    for (Slot& s : slots_) {
      if (s.state != Slot::State::kOpen || now <= s.deadline) continue;
      self().cancel_stream(s);
      worker_.record_failure(s.measured, s.origin, now, ErrorKind::kTimeout, s.cost);
      slots_.release(s);
      expired = true;
    }
    if (expired) self().pump();
  }

  // The connection ends: its open streams fail with `kind`, or (none, or a stop) are dropped.
  void drop_open(std::optional<ErrorKind> kind) {
    auto now = Clock::now();
    const bool record = kind && !stopped_ && !worker_.stopping();
    for (Slot& s : slots_) {
      if (s.state != Slot::State::kOpen) continue;
      if (record) worker_.record_failure(s.measured, s.origin, now, *kind, s.cost);
      slots_.release(s);
    }
    slots_.carried = 0;
  }

  // The loop is over: no request will be begun, and the worker hears of it once.
  void end() {
    if (ended_) return;
    ended_ = true;
    slots_.done = true;
    self().close_io();
    worker_.on_connection_done();
  }

  Worker& worker_;
  int index_;
  StreamSlots<Slot> slots_;        // plan.streams of them
  RequestCost cost_;               // what the requests waiting for the connection paid
  Clock::time_point read_time_{};  // when the bytes being processed were read
  State state_ = State::kIdle;
  bool draining_ = false;  // GOAWAY came, or no stream can be opened any more: no new streams
  bool in_pump_ = false;
  bool preconnect_ = false;  // open loop: the connect before the first slot
  bool stopped_ = false;
  bool ended_ = false;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace loadlab::load
