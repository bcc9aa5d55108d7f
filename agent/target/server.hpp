#pragma once
// The loadlab target: an HTTP/1.1 server answering 200 with a fixed body to any request,
// optionally after a delay, on N io threads. Usable in-process (tests) or from main.cpp.
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
#include "listener.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "session_env.hpp"

namespace loadlab::target {

struct ServerOptions {
  Endpoint listen{"127.0.0.1", 0};
  unsigned threads = 1;                // io threads, each with its own io_context
  std::chrono::milliseconds delay{0};  // wait before each response (a timer, never a sleep)
  std::string body = "Have Fun ~ Tester !";
  std::chrono::steady_clock::duration read_timeout = std::chrono::seconds(60);
  std::chrono::steady_clock::duration shutdown_grace = std::chrono::seconds(2);
  std::uint32_t header_limit = 8 * 1024;
  std::uint64_t body_limit = 1024 * 1024;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Resolves the host and binds. Called once, before run(), by the owning thread.
  boost::beast::error_code listen();
  // The bound address with the real port (valid after a successful listen()).
  Endpoint local_endpoint() const;

  // The executor of the accepting io_context: where a signal_set belongs.
  boost::asio::any_io_executor control_executor();

  // Runs the io threads (the caller's thread is one of them) until a shutdown completes.
  void run();

  // Any thread, non-blocking, idempotent: stop accepting, let in-flight responses finish
  // (at most `shutdown_grace`), then make run() return.
  void initiate_shutdown();

  // Responses sent so far, summed over io threads.
  std::uint64_t requests() const;

 private:
  void on_drain_tick();
  void stop_io();

  ServerOptions options_;
  CannedResponses responses_;
  std::shared_ptr<spdlog::logger> log_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> in_flight_{0};
  SessionEnv env_;
  // Declared after what sessions reference: destroying the io_contexts destroys the sessions.
  std::vector<std::unique_ptr<IoWorker>> workers_;
  std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guards_;
  std::shared_ptr<Listener> listener_;
  boost::asio::steady_timer drain_timer_;
  std::chrono::steady_clock::time_point drain_deadline_;
};

}  // namespace loadlab::target
