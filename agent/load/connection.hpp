#pragma once
// One closed-loop HTTP/1.1 client connection: connect, write the request, read the
// response, record, repeat. Lives on its worker's thread; every method runs there.
// Internal to loadlab_load.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <optional>

#include "load_result.hpp"
#include "response_parser.hpp"
#include "run_plan.hpp"

namespace loadlab::load {

class Worker;

class Connection {
 public:
  explicit Connection(Worker& worker);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  // Closes the socket; the pending operation completes with an error and the loop ends.
  void stop();
  // Called by the worker's periodic sweep: closes the socket if the current operation
  // has passed its deadline (one sweep timer per thread instead of re-arming a timer per
  // request keeps timer-queue work off the request path).
  void check_deadline(Clock::time_point now);

 private:
  void next();
  void do_connect();
  void on_connect(const boost::system::error_code& ec);
  void do_write();
  void on_write(const boost::system::error_code& ec);
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t bytes);
  void fail(ErrorKind kind, const boost::system::error_code& ec);
  void close();
  void end();

  Worker& worker_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::optional<ResponseParser> parser_;
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point sent_{};
  bool connected_ = false;
  bool first_connect_ = true;
  bool measured_ = false;
  bool timed_out_ = false;
  bool stopped_ = false;
  bool ended_ = false;
};

}  // namespace loadlab::load
