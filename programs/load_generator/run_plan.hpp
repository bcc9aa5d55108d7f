#pragma once
// What every worker thread of one run shares: the immutable plan and the few cross-thread
// flags. Internal to loadlab_load.
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loadlab::load {

class TlsClient;
class QuicTlsClient;
class SecureClients;

using Clock = std::chrono::steady_clock;

// The measured window, read by every thread. Placed before the workers start; or, with a
// scheduled start, closed (every request warm-up) until the runner opens it, once, at the
// instant the controller chose.
class MeasureWindow {
 public:
  // Requests started at or after `start` (and, with an end, not after it) are measured.
  void place(Clock::time_point start, std::optional<Clock::time_point> end) {
    end_.store(end ? end->time_since_epoch().count() : kNone, std::memory_order_relaxed);
    start_.store(start.time_since_epoch().count(), std::memory_order_release);
  }
  // Clock::time_point::max() while a scheduled start has not come.
  Clock::time_point start() const { return at(start_.load(std::memory_order_acquire)); }
  std::optional<Clock::time_point> end() const {
    const auto e = end_.load(std::memory_order_relaxed);
    return e == kNone ? std::nullopt : std::optional(at(e));
  }
  bool placed() const { return start_.load(std::memory_order_acquire) != kNone; }

 private:
  static constexpr Clock::rep kNone = std::numeric_limits<Clock::rep>::max();
  static Clock::time_point at(Clock::rep r) { return Clock::time_point(Clock::duration(r)); }
  std::atomic<Clock::rep> start_{kNone};
  std::atomic<Clock::rep> end_{kNone};
};

// Written once by the runner before the workers start, read-only afterwards (but for the
// window of a scheduled start).
struct RunPlan {
  std::string request;  // HTTP/1.1: serialised once, written as is
  // --protocol h2: every connection is an HTTP/2 session (h2 through ALPN over TLS, h2c with
  // prior knowledge over TCP) carrying up to `streams` requests at once, each with these
  // header fields (pseudo-headers first) and `body`.
  bool h2 = false;
  // --protocol h3: every connection is QUIC (TLS 1.3 by `quic`) carrying HTTP/3, up to
  // `streams` requests at once, with the same header fields as HTTP/2 (`h2_headers`: HTTP/3
  // has the same pseudo-headers and forbids the same connection-specific fields).
  bool h3 = false;
  QuicTlsClient* quic = nullptr;
  int streams = 1;
  std::vector<std::pair<std::string, std::string>> h2_headers;
  std::string body;
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;
  // https://: the TLS context every worker's connections share; nullptr for http://.
  TlsClient* tls = nullptr;
  // https:// or h3: what makes each connection (loadlab_load_secure's); nullptr for http://.
  SecureClients* secure = nullptr;
  // Requests started before its start are warm-up; -d only: nothing is sent or counted after
  // its end.
  MeasureWindow window;
  Clock::time_point measure_start() const { return window.start(); }
  std::optional<Clock::time_point> measure_end() const { return window.end(); }
  Clock::time_point warmup_end;  // the window's start, unless a scheduled start places it later
  // --start-on-signal: the window opens at the instant a signal names (LoadRunner::start_at).
  bool scheduled_start = false;
  Clock::duration timeout{};
  bool keep_alive = true;
  bool head = false;  // HEAD: responses carry no body whatever their Content-Length says
  int total_connections = 0;
  // Open loop (--rate): each worker paces `rate_per_thread` requests per second from
  // `pace_start`; 0 = closed loop (send as soon as the previous response arrived).
  double rate_per_thread = 0;
  Clock::time_point pace_start;
  // Uniform arrivals: thread i (the cell's thread g = first_thread + i of pace_threads) paces
  // from pace_start + g / (pace_threads × rate_per_thread), so the threads' slots interleave
  // into one even pace, the worker's or, over several workers (--pace-share), the cell's (in
  // phase, threads sent together: bursts of `threads` requests, which a one-thread server
  // queued). With a scheduled start the pace is anchored again at the window's instant, so that
  // every worker of the cell keeps the same grid. Poisson: thread g draws stream g.
  int first_thread = 0;
  int pace_threads = 1;
  // Open loop: the send times are a Poisson process (exponential gaps from `seed`), not an
  // even pace (schedule.hpp).
  bool poisson = false;
  uint64_t seed = 0;
  // Open loop: the least time between two wake-ups of a worker's pacer timer. Above
  // 1 / pace_gap slots per second a thread, a wake-up hands out several slots, each up to
  // pace_gap late (its latency, counted from the slot, includes that); below it every slot
  // is served on time. Each wake-up re-programs a kernel timer, which costs a VM exit on
  // virtual machines: a wake-up per slot was what held the open loop below the closed one.
  Clock::duration pace_gap = std::chrono::microseconds(20);
  // Open loop (--pace-granularity): a slot due within this of now is begun now, early, so one
  // wake-up sends every slot of the next `pace_granularity`; an early request's latency counts
  // from when it began (its connect or its write), never from its later slot. 0: none early.
  Clock::duration pace_granularity{};
  bool log_requests = false;  // --csv-requests: keep one record per measured request
};

// Cross-thread state, touched only on rare paths (stop, connect outcome), never per request.
struct RunState {
  std::atomic<bool> stop{false};  // every worker should stop (set by any thread)
  std::atomic<bool> any_connected{false};
  std::atomic<int> first_connect_failures{0};  // connections whose very first connect failed
  std::mutex error_mutex;
  std::string first_connect_error;  // guarded by error_mutex
  std::string first_tls_error;      // guarded by error_mutex: why the first failed handshake failed

  void note_tls_failure(const std::string& reason) {
    std::lock_guard lock(error_mutex);
    if (first_tls_error.empty()) first_tls_error = reason;
  }

  // A connection's first connect failed; when every connection's did and none ever
  // connected, the target is unreachable and the run stops.
  void note_first_connect_failure(int total_connections, const std::string& reason) {
    {
      std::lock_guard lock(error_mutex);
      if (first_connect_error.empty()) first_connect_error = reason;
    }
    if (first_connect_failures.fetch_add(1) + 1 >= total_connections && !any_connected.load())
      stop.store(true);
  }
};

}  // namespace loadlab::load
