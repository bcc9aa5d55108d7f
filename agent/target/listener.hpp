#pragma once
// Accepts connections on one io_context and hands each socket to the next io thread's
// io_context in turn, where its Session lives for good.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "session_env.hpp"

namespace loadlab::target {

// An io thread's context and the count of responses its sessions sent (one cache line each,
// so the hot counters of different threads do not share one).
struct alignas(64) IoWorker {
  std::atomic<std::uint64_t> responses_sent{0};
  boost::asio::io_context ioc{1};  // destroyed first: its sessions hold `responses_sent`
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // `accept_ioc` runs the acceptor; sessions go round-robin to `workers` (non-empty).
  Listener(boost::asio::io_context& accept_ioc, std::vector<std::unique_ptr<IoWorker>>& workers,
           const SessionEnv& env);

  // Opens, binds and listens. Called once, before run(), from the owning thread.
  boost::beast::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint);
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  void run();
  // Stops accepting. Called on the accepting io_context's thread.
  void close();

 private:
  void do_accept();
  void on_accept(boost::beast::error_code ec, boost::asio::ip::tcp::socket socket);
  void fail(boost::beast::error_code ec, const char* what);

  boost::asio::io_context& accept_ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  std::vector<std::unique_ptr<IoWorker>>& workers_;
  const SessionEnv& env_;
  std::size_t next_worker_ = 0;
};

}  // namespace loadlab::target
