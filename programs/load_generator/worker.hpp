#pragma once
// One load thread: its own io_context, histogram, counters, request budget and share of
// connections. Nothing on the request path is shared with other threads. Internal.
#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "complete_response.hpp"
#include "handler_memory.hpp"
#include "load_result.hpp"
#include "loadlab/shared/histogram.hpp"
#include "request_log.hpp"
#include "run_plan.hpp"
#include "schedule.hpp"

namespace loadlab::load {

class ClientConnection;

// What one request paid besides its latency, for its --csv-requests record: the TCP
// connect and TLS handshake of a new connection (zero on a reused one), and whether that
// handshake resumed an earlier session.
struct RequestCost {
  Clock::duration connect{};
  Clock::duration tls{};
  bool reused = false;  // went on a connection that had carried a request before
  bool resumed = false;
};

// Figures of one worker; read by the runner only after the worker's thread has ended.
struct WorkerTotals {
  Histogram histogram;              // latency from the request's origin (intended send time in open loop)
  Histogram histogram_uncorrected;  // from the actual write; open loop only (closed: = histogram)
  Histogram connect_histogram;      // connects completed inside the window, µs
  Histogram tls_histogram;          // TLS handshakes completed inside the window, µs
  Histogram first_byte_histogram;   // measured responses: the write to their first byte, µs
  int64_t connects = 0;
  int64_t tls_handshakes = 0;  // completed inside the window
  int64_t tls_resumed = 0;     // of those, resumptions
  int64_t tls_early_data = 0;  // of those, QUIC handshakes whose 0-RTT data the server took
  int64_t requests = 0;
  int64_t responses = 0;
  int64_t errors = 0;
  int64_t bytes_read = 0;
  int64_t warmup_requests = 0;
  // Requests of any send slot or start (warm-up's too) that ended inside the window, answered
  // or failed: what the window served.
  int64_t window_completions = 0;
  std::array<int64_t, kErrorKindCount> errors_by_kind{};
  std::array<int64_t, 1000> status{};  // index = status code (ResponseParser accepts 100..999)
  std::optional<Clock::time_point> last_measured_completion;
  // Open loop: measured requests begun (sent or connecting) and when the last one began.
  int64_t begun = 0;
  std::optional<Clock::time_point> last_begun;
  RequestLog log;  // --csv-requests only
};

class Worker {
 public:
  // `index`: the worker's thread among the run's (its Poisson draws are its own).
  // `budget`: measured requests this worker may start (nullopt = unbounded, for -d).
  Worker(const RunPlan& plan, RunState& state, int index, int connections, std::optional<int64_t> budget);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Thread body: runs the connections until each has stopped. Called once, on the
  // worker's own thread.
  void run();
  // Any thread; non-blocking and idempotent. In-flight requests are discarded.
  void post_stop();
  // Any thread, once: a scheduled start placed the window (its end stops the worker).
  void post_window_placed();

  // After run() returned.
  const WorkerTotals& totals() const { return totals_; }
  // Open loop: slots of this worker's schedule due in [measure start, `end`).
  int64_t slots_due_before(Clock::time_point end) const {
    return schedule_.slots_between(plan_.measure_start(), end);
  }
  RequestLog& log() { return totals_.log; }

  // Progress snapshots, any thread (relaxed: one writer, the worker thread).
  int64_t completed() const { return pub_completed_.load(std::memory_order_relaxed); }
  int64_t failed() const { return pub_failed_.load(std::memory_order_relaxed); }
  int64_t measured() const { return pub_measured_.load(std::memory_order_relaxed); }
  int64_t measured_failed() const { return pub_measured_failed_.load(std::memory_order_relaxed); }
  // The sum of the measured requests' latencies, µs (the live mean of progress events).
  int64_t measured_latency_sum_us() const { return pub_latency_sum_us_.load(std::memory_order_relaxed); }

  // --- called by this worker's connections, on the worker thread ---
  const RunPlan& plan() const { return plan_; }
  boost::asio::io_context& io() { return ioc_; }
  bool stopping() const { return stopping_; }
  bool open_loop() const { return plan_.rate_per_thread > 0; }
  // Open loop: the time of the next slot no connection has taken, now taken by the caller
  // (which sends at it, or later if it is busy until then).
  Clock::time_point take_slot() { return schedule_.time_of(next_slot_++); }
  // HTTP/1.1 connections read their whole responses through it (complete_response.hpp).
  CompleteResponseReader& response_reader() { return response_reader_; }
  // Open loop: connection `index` is idle until `due` (the slot it took); the worker calls its resume() then
  // (or later, never earlier).
  void wait_for_slot(Clock::time_point due, int index);
  // Open loop, uniform: this thread's offset on the pace's grid (run_plan.hpp, `pace_threads`).
  Clock::duration pace_phase() const;
  void anchor_pace_at_window();
  // Open loop: whether a slot at `due` is sent at `now`: it is due, or due within the pacing
  // granularity (sent early, so that one wake-up serves the slots of the next granularity).
  bool slot_due(Clock::time_point due, Clock::time_point now) const {
    return due <= now + plan_.pace_granularity;
  }
  // Open loop: where a request's latency counts from: its slot, or when it began (its connect
  // or its write) if that came earlier (a slot begun early by the granularity). Closed loop:
  // `slot` is the time it began.
  static Clock::time_point latency_origin(Clock::time_point slot, Clock::time_point began) {
    return std::min(slot, began);
  }
  // Open loop: resumes every connection whose slot is due at `now`. Called from every
  // completion, so under load the slots are handed out without a timer wake-up.
  void resume_due(Clock::time_point now) {
    if (!waiters_.empty() && slot_due(waiters_.front().due, now)) resume_due_slow(now);
  }
  // Takes a ticket for one measured request begun at `now`; false when the budget is spent.
  bool take_ticket(Clock::time_point now);
  void note_connected();
  void note_first_connect_failure(const std::string& reason);
  void note_tls_failure(const std::string& reason) { state_.note_tls_failure(reason); }
  // `origin`: where latency counts from (intended send time in open loop, else the write);
  // `sent`: when the request was actually written; `first_byte`: when the first byte of
  // its response came.
  void record_response(bool measured, Clock::time_point origin, Clock::time_point sent,
                       Clock::time_point first_byte, Clock::time_point done, int status, size_t bytes,
                       const RequestCost& cost);
  void record_failure(bool measured, Clock::time_point origin, Clock::time_point done, ErrorKind kind,
                      const RequestCost& cost);
  void record_connect(Clock::time_point started, Clock::time_point done);
  void record_handshake(Clock::time_point started, Clock::time_point done, bool resumed);
  // QUIC (--protocol h3): the handshake is the connect. Counted as a connect (no TCP connect
  // time to record) and as a TLS handshake; `early_data`: its 0-RTT data was accepted.
  void record_quic_handshake(Clock::time_point started, Clock::time_point done, bool resumed,
                             bool early_data);
  void on_connection_done();

 private:
  void stop_now();
  void schedule_sweep();
  void arm_end_timer();  // -d: the window's end stops the worker
  void resume_due_slow(Clock::time_point now);
  void wait_for_mail();
  void on_mail(const boost::system::error_code& ec);
  void send_mail(std::atomic<bool>& flag);
  void arm_pacer();
  void set_pace_timer(Clock::time_point at);
  void cancel_pacer();
  void on_pace(const boost::system::error_code& ec);
  // The pacer's wake-up: its operation is allocated from pace_memory_, never the heap.
  struct PaceHandler {
    Worker* worker;
    using allocator_type = HandlerAllocator<void>;
    allocator_type get_allocator() const noexcept { return allocator_type(worker->pace_memory_); }
    void operator()(const boost::system::error_code& ec) const { worker->on_pace(ec); }
  };
  bool counts(bool measured, Clock::time_point done);
  bool in_window(Clock::time_point t) const;
  void log_request(Clock::time_point origin, Clock::time_point done, int64_t first_byte_us, int status,
                   size_t bytes, const RequestCost& cost);
  void publish();

  const RunPlan& plan_;
  RunState& state_;
  const int index_;  // this worker's thread among the run's
  // Only this worker's thread touches its io_context: other threads leave their requests in the
  // mailbox below, so neither the scheduler nor the reactor takes a lock.
  HandlerMemory pace_memory_;  // before ioc_: an operation ioc_ destroys is freed into it
  boost::asio::io_context ioc_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  // The mailbox: what other threads ask (post_stop, post_window_placed), as flags, and an
  // eventfd they write to wake the worker, which waits on it through its reactor.
  using Descriptor = boost::asio::posix::basic_stream_descriptor<boost::asio::io_context::executor_type>;
  Descriptor mail_fd_;
  std::atomic<bool> mail_stop_{false};
  std::atomic<bool> mail_window_{false};
  boost::asio::steady_timer sweep_timer_;
  boost::asio::steady_timer end_timer_;
  // Open loop: the pacer's timer, a timerfd of the worker's own waited on through the reactor:
  // one timerfd_settime a wake-up and no timer queue, where an Asio timer takes the timer
  // queue's lock, reads the clock four times and programs the kernel's timer twice.
  Descriptor pace_fd_;
  bool pace_waiting_ = false;  // a wait on pace_fd_ is pending
  Schedule schedule_;
  int64_t next_slot_ = 0;  // open loop: the first slot no connection has taken
  CompleteResponseReader response_reader_;
  // Open loop: the idle connections, a min-heap on their due time (one entry each at most).
  struct Waiter {
    Clock::time_point due;
    int index;
  };
  std::vector<Waiter> waiters_;
  std::optional<Clock::time_point> pace_armed_;  // when pace_fd_ expires, if it is set
  Clock::time_point last_pace_{};                // when the pacer last woke
  Clock::duration sweep_interval_;
  std::vector<std::unique_ptr<ClientConnection>> connections_;
  int active_ = 0;
  std::optional<int64_t> budget_;
  bool stopping_ = false;
  bool connected_once_ = false;
  WorkerTotals totals_;
  int64_t completed_ = 0, failed_ = 0;

  alignas(64) std::atomic<int64_t> pub_completed_{0};
  std::atomic<int64_t> pub_failed_{0};
  std::atomic<int64_t> pub_measured_{0};
  std::atomic<int64_t> pub_measured_failed_{0};
  std::atomic<int64_t> pub_latency_sum_us_{0};
  int64_t latency_sum_us_ = 0;
};

// Open loop with keep-alive: a connection connects before its first slot (as wrk2 does), so the
// first requests do not pay for the handshake and an unreachable target shows at once rather
// than at each connection's first slot.
inline bool connects_first(const Worker& worker) { return worker.open_loop() && worker.plan().keep_alive; }

}  // namespace loadlab::load
