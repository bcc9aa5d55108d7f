#pragma once
// Accepts connections on one io_context and hands each socket to the next of its io workers in
// turn, where its Session lives for good. A server has either one Listener for all workers
// (a shared acceptor) or one per worker on a SO_REUSEPORT socket (the kernel spreads
// connections); see ServerOptions::acceptor.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <cstddef>
#include <memory>
#include <vector>

#include "io_worker.hpp"
#include "session_env.hpp"

namespace loadlab::target {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // `accept_ioc` runs the acceptor; sessions go round-robin to `workers` (non-empty).
  Listener(boost::asio::io_context& accept_ioc, std::vector<IoWorker*> workers, const SessionEnv& env);

  // Opens, binds and listens. Called once, before run(), from the owning thread.
  boost::beast::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint, bool reuse_port);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  boost::asio::io_context& accept_context() { return accept_ioc_; }

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
  std::vector<IoWorker*> workers_;
  const SessionEnv& env_;
  std::size_t next_worker_ = 0;
};

}  // namespace loadlab::target
