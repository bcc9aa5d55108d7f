#pragma once
// The loadlab target: an HTTP/1.1 and HTTP/2 server (plain, where HTTP/2 is h2c with prior
// knowledge, or over TLS, where ALPN chooses h2 or http/1.1), and optionally HTTP/3 over QUIC
// on UDP at the same port, answering any request with a configurable status and body, after
// optional CPU work, delay and stall, on N io threads. Usable in-process (tests) or from
// main.cpp. GET /__loadlab/stats (over any protocol) answers
// {"requests": N, "connections": C, "tls_handshakes": H, "tls_resumed": R,
//  "h2_connections": C2, "h2_streams": N2, "h3_connections": C3, "h3_streams": N3,
//  "h3_resumed": R3, "h3_early_data": E3}
// N2 and N3 of the N requests answered over HTTP/2 and HTTP/3; C counts TCP connections
// accepted and QUIC connections whose handshake completed (C3 of them); H and R are the TLS
// handshakes over TCP; R3 the QUIC handshakes that resumed a session, E3 those whose 0-RTT data
// was accepted.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "canned_responses.hpp"
#include "h3_limits.hpp"
#include "io_worker.hpp"
#include "knobs.hpp"
#include "listener.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "secure_transport.hpp"
#include "session_env.hpp"
#include "stall.hpp"

namespace loadlab::target {

enum class AcceptorMode {
  shared,     // one acceptor, sockets handed round-robin to the io threads (measured faster)
  reuseport,  // one SO_REUSEPORT acceptor per io thread; the kernel spreads connections
};

struct ServerOptions {
  Endpoint listen{"127.0.0.1", 0};
  unsigned threads = 1;  // io threads, each with its own io_context
  AcceptorMode acceptor = AcceptorMode::shared;
  DelaySpec delay;                   // wait before each response (a timer, never a sleep)
  std::chrono::nanoseconds work{0};  // CPU burnt per request on the io thread
  std::string body = "Have Fun ~ Tester !";
  unsigned status = 200;  // 200..599
  // Once, `stall_after` after the first request, hold every response for `stall_duration`.
  std::chrono::milliseconds stall_after{0};
  std::chrono::milliseconds stall_duration{0};                                  // 0 = no stall
  std::chrono::steady_clock::duration read_timeout = std::chrono::seconds(10);  // first byte to last
  std::chrono::steady_clock::duration idle_timeout = std::chrono::seconds(60);  // between requests
  std::chrono::steady_clock::duration shutdown_grace = std::chrono::seconds(2);
  std::uint32_t header_limit = 8 * 1024;
  std::uint64_t body_limit = 1024 * 1024;
  // Non-null: serve HTTPS (and HTTP/3 on UDP at the TCP listener's address and port, where it
  // says so) through it: loadlab_target_secure's TlsTransport or loadlab_target_h3's
  // make_tls_quic_transport. Shared by all io threads.
  std::shared_ptr<const SecureTransport> secure;
  H3Limits h3_limits;  // address validation (Retry) and the caps on handshakes and connections
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Resolves the host and binds. Called once, before run(), by the owning thread.
  boost::beast::error_code listen();
  // The bound address with the real port (valid after a successful listen()); HTTP/3's UDP
  // socket has the same.
  Endpoint local_endpoint() const;

  // The executor of the first io_context: where a signal_set belongs.
  boost::asio::any_io_executor control_executor();

  // Runs the io threads (the caller's thread is one of them) until a shutdown completes.
  void run();

  // Any thread, non-blocking, idempotent: stop accepting, let in-flight responses finish
  // (at most `shutdown_grace`), then make run() return.
  void initiate_shutdown();

  // Requests answered so far (the stats endpoint's own excluded), summed over io threads.
  std::uint64_t requests() const;
  // All the stats endpoint's counts. Any thread.
  ServerStats stats() const;
  // Requests read whole and not yet answered (what a shutdown waits for). Any thread.
  std::int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  boost::beast::error_code listen_on(const boost::asio::ip::tcp::endpoint& endpoint);
  boost::beast::error_code listen_udp();
  void on_drain_tick();
  void stop_io();

  ServerOptions options_;
  CannedResponses responses_;
  std::shared_ptr<spdlog::logger> log_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> in_flight_{0};
  Stall stall_;
  SessionEnv env_;
  // Declared after what sessions reference: destroying the io_contexts destroys the sessions.
  IoWorkers workers_;
  std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guards_;
  std::vector<std::shared_ptr<Listener>> listeners_;
  std::unique_ptr<DatagramServer> h3_;  // HTTP/3 on the first io_context, where secure serves it
  boost::asio::steady_timer drain_timer_;
  std::chrono::steady_clock::time_point drain_deadline_;
};

}  // namespace loadlab::target
