#pragma once
// One accepted connection: read a request, wait the configured delay on a timer, write the
// canned response, repeat while keep-alive. All handlers of a session run on the single thread
// of the io_context owning its socket, so the session needs no strand and no lock.
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "session_env.hpp"

namespace loadlab::target {

class Session : public std::enable_shared_from_this<Session> {
 public:
  // `responses_sent` is the counter of the io thread owning `socket`.
  Session(boost::asio::ip::tcp::socket&& socket, const SessionEnv& env,
          std::atomic<std::uint64_t>& responses_sent);
  ~Session();

  // Called from the accepting thread; hops to the socket's own executor.
  void run();

 private:
  void do_read();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void on_delay(boost::beast::error_code ec);
  void do_write();
  void on_write(boost::beast::error_code ec, std::size_t bytes);
  void do_close();
  void do_linger();
  void on_linger(boost::beast::error_code ec, std::size_t bytes);
  void answer_error(boost::beast::http::status status);
  void fail(boost::beast::error_code ec, const char* what);

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer timer_;
  const SessionEnv& env_;
  std::atomic<std::uint64_t>& responses_sent_;

  // The request being answered.
  bool http10_ = false;
  bool keep_alive_ = false;
  bool head_ = false;
  bool in_flight_ = false;           // counted in env_.in_flight
  std::string_view error_response_;  // non-empty: answer with this and close
  std::string_view response_;        // what is being written
  bool close_after_write_ = false;
};

}  // namespace loadlab::target
