#pragma once
// A target Server running on its own thread for the duration of a test, on 127.0.0.1:0.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include "server.hpp"

namespace loadlab::target {

class RunningServer {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RunningServer(ServerOptions options) : server_(std::move(options)) {
    auto ec = server_.listen();
    EXPECT_FALSE(ec) << ec.message();
    thread_ = std::thread([this] {
      server_.run();
      stopped_ = true;
    });
  }
  ~RunningServer() { stop(); }

  uint16_t port() const { return server_.local_endpoint().port; }
  Server& server() { return server_; }
  bool stopped() const { return stopped_; }

  // Initiates shutdown and joins; returns how long run() took to return.
  Clock::duration stop() {
    auto start = Clock::now();
    if (thread_.joinable()) {
      server_.initiate_shutdown();
      thread_.join();
    }
    return Clock::now() - start;
  }

 private:
  Server server_;
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

}  // namespace loadlab::target
