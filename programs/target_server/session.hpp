#pragma once
// One accepted connection: (TLS handshake,) read a request, burn the configured CPU, wait the
// delay (and any stall) on a timer, write the response, repeat while keep-alive. All handlers of
// a session run on the single thread of the io_context owning its socket, so it needs no strand
// and no lock.
//
// A Session is a template on its stream, instantiated for PlainStream and TlsStream only: the
// plain path calls the socket directly, with no virtual call and no TLS test per operation.
//
// Timeouts use one lazy watchdog timer per session instead of a timer per operation: an
// operation only stores its deadline; the watchdog wakes at the latest every `period` (the
// shortest timeout), so it never sleeps past a deadline set after it was armed, and closes the
// socket when the deadline has passed.
//
// HTTP/2 is an H2Session's: a Session hands its stream over to one when ALPN chose h2, or when
// a plain connection opens with the HTTP/2 client preface (h2c with prior knowledge).
#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/status.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "answer.hpp"
#include "knobs.hpp"
#include "request_parser.hpp"
#include "session_env.hpp"

namespace loadlab::tls_stream {
template <class Socket>
class FdTlsStream;  // <loadlab/tls_stream/fd_tls_stream.hpp>: loadlab_target_secure's only
}  // namespace loadlab::tls_stream

namespace loadlab::target {

using PlainStream = boost::asio::ip::tcp::socket;
// TLS over the socket's own descriptor, with no buffers of its own beside OpenSSL's (which an idle
// connection releases); several small buffers (a head and a body) go out as one TLS record.
using TlsStream = loadlab::tls_stream::FdTlsStream<boost::asio::ip::tcp::socket>;

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `worker` owns the io_context of `socket`; its counters are this session's to bump. For a
  // TlsStream, `env.tls` is the context.
  Session(boost::asio::ip::tcp::socket&& socket, const SessionEnv& env, IoWorker& worker);
  ~Session();

  // Called from the accepting thread; hops to the socket's own executor.
  void run();

 private:
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<Session<Stream>>::weak_from_this;

  [[nodiscard]] static Stream make_stream(boost::asio::ip::tcp::socket&& socket, const SessionEnv& env);
  boost::asio::ip::tcp::socket& socket() { return boost::beast::get_lowest_layer(stream_); }

  void start();
  void on_handshake(boost::beast::error_code ec);
  void start_request();
  void parse_buffered();
  void do_read();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void on_request();
  void on_delay(boost::beast::error_code ec);
  void hold_or_write();
  void on_hold(boost::beast::error_code ec);
  void do_write();
  void on_write(boost::beast::error_code ec, std::size_t bytes);
  void do_close();
  void on_tls_shutdown(boost::beast::error_code ec);
  void close_tcp();
  void do_linger();
  void on_linger(boost::beast::error_code ec, std::size_t bytes);
  void answer_error(boost::beast::http::status status);

  // TlsStream's only, defined in tls_sessions.cpp (loadlab_target_secure), so that the plain
  // family names no OpenSSL function: the stream over `env.tls`, the server handshake, counting
  // a finished one (true when ALPN chose h2), and our close_notify.
  [[nodiscard]] static Stream make_tls_stream(boost::asio::ip::tcp::socket&& socket, const SessionEnv& env);
  void start_handshake();
  bool note_handshake();
  void start_tls_shutdown();
  void hand_over_to_h2();
  void fail(boost::beast::error_code ec, const char* what);

  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  void arm_watchdog(Clock::time_point at);
  void on_watchdog(boost::beast::error_code ec);

  // Fills out_ with the response to the request read; returns whether to close after it.
  bool build_response();

  Stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  boost::asio::steady_timer timer_;     // delay and stall
  boost::asio::steady_timer watchdog_;  // timeouts
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::duration watchdog_period_;
  bool timed_out_ = false;
  bool handed_over_ = false;  // stream_ is an H2Session's now
  const SessionEnv& env_;
  IoWorker& worker_;
  Random random_;

  // The request being answered.
  bool request_started_ = false;  // a byte of it has arrived: the read deadline runs
  bool sniff_preface_ = !kTls;    // the connection's first bytes may be the HTTP/2 preface
  bool in_flight_ = false;        // counted in env_.in_flight
  bool http10_ = false;
  bool keep_alive_ = false;
  bool head_request_ = false;
  bool close_after_write_ = false;
  std::string_view error_response_;  // non-empty: answer with this and close
  bool custom_ = false;              // built per request (knob headers, stats, bad knob)
  bool stats_ = false;
  Answer answer_;
  std::string custom_text_;  // stats JSON or an error message
  std::string head_;         // per-request head, capacity reused
  std::vector<boost::asio::const_buffer> out_;
};

extern template class Session<PlainStream>;  // session.cpp; TlsStream's: tls_sessions.cpp

}  // namespace loadlab::target
