#pragma once
// A TCP proxy on 127.0.0.1 that holds every byte `delay` in each direction: a distant agent
// on a machine without netem. Each accepted connection gets a connection to `upstream` and
// two pumps; a chunk read at t is written at t + delay, in order. Stopped (its threads
// joined, its sockets closed) by its destructor.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loadlab/shared/endpoint.hpp"

namespace loadlab::testing {

class DelayProxy {
 public:
  DelayProxy(const std::string& upstream, std::chrono::milliseconds delay) : delay_(delay) {
    auto ep = parse_endpoint(upstream);
    upstream_.sin_family = AF_INET;
    upstream_.sin_port = htons(ep ? ep->port : 0);
    inet_pton(AF_INET, ep ? ep->host.c_str() : "127.0.0.1", &upstream_.sin_addr);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(listen_fd_, 16) == 0 &&
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      address_ = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~DelayProxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : pumps_) t.join();
    for (int fd : fds_) close(fd);
    close(listen_fd_);
  }
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  const std::string& address() const { return address_; }  // "" when it could not listen

 private:
  using Clock = std::chrono::steady_clock;
  struct Chunk {
    Clock::time_point due;
    std::string bytes;
  };

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int in = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (in < 0) continue;
      int out = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (connect(out, reinterpret_cast<sockaddr*>(&upstream_), sizeof upstream_) != 0) {
        close(in);
        close(out);
        continue;
      }
      int one = 1;
      setsockopt(in, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fds_.push_back(in);
      fds_.push_back(out);
      pumps_.emplace_back([this, in, out] { pump(in, out); });
      pumps_.emplace_back([this, in, out] { pump(out, in); });
    }
  }

  // Reads `from`, writes to `to` each chunk `delay_` after it was read; a writer thread of its
  // own keeps the reading going while chunks wait.
  void pump(int from, int to) {
    std::mutex m;
    std::condition_variable cv;
    std::deque<Chunk> queue;
    bool done = false;
    std::thread writer([&] {
      std::unique_lock lock(m);
      for (;;) {
        cv.wait(lock, [&] { return done || !queue.empty(); });
        if (queue.empty()) return;
        Chunk c = std::move(queue.front());
        queue.pop_front();
        lock.unlock();
        std::this_thread::sleep_until(c.due);
        for (size_t sent = 0; sent < c.bytes.size();) {
          ssize_t n = send(to, c.bytes.data() + sent, c.bytes.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
        lock.lock();
      }
    });
    char buf[65536];
    while (!stop_) {
      pollfd p{from, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      ssize_t n = recv(from, buf, sizeof buf, 0);
      if (n <= 0) break;
      std::lock_guard lock(m);
      queue.push_back({Clock::now() + delay_, std::string(buf, static_cast<size_t>(n))});
      cv.notify_one();
    }
    {
      std::lock_guard lock(m);
      done = true;
    }
    cv.notify_one();
    writer.join();
    shutdown(to, SHUT_WR);
  }

  std::chrono::milliseconds delay_;
  sockaddr_in upstream_{};
  int listen_fd_ = -1;
  std::string address_;
  std::atomic<bool> stop_{false};
  std::vector<int> fds_;  // the acceptor's only: closed when every pump has ended
  std::vector<std::thread> pumps_;
  std::thread acceptor_;  // last: starts after the members it uses
};

}  // namespace loadlab::testing
