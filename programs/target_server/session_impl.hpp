#pragma once
// The definitions of Session<Stream>, a connection's HTTP/1.1 session and its hand-over to
// HTTP/2: included by session.cpp, which instantiates it for PlainStream (loadlab_target), and
// by tls_sessions.cpp, which instantiates it for TlsStream (loadlab_target_secure), so that a
// plain build links no TLS library.
#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>

#include "h2_session.hpp"
#include "io_failure.hpp"
#include "session.hpp"

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::size_t kReadChunk = 16 * 1024;

// What a client speaking HTTP/2 with prior knowledge sends first (RFC 9113 §3.4) begins with
// this line, which no HTTP/1.1 request can be (method PRI, version 2.0). Once it is seen, the
// connection is HTTP/2's: a preface that goes wrong after it gets HTTP/2's answer (GOAWAY
// PROTOCOL_ERROR, from H2Session), not an HTTP/1.1 400.
constexpr std::string_view kH2PrefaceLine = "PRI * HTTP/2.0\r\n";

enum class Preface { absent, partial, whole };

Preface match_preface(net::const_buffer bytes) {
  const std::string_view seen(static_cast<const char*>(bytes.data()),
                              std::min(bytes.size(), kH2PrefaceLine.size()));
  if (!kH2PrefaceLine.starts_with(seen)) return Preface::absent;
  return seen.size() == kH2PrefaceLine.size() ? Preface::whole : Preface::partial;
}

}  // namespace

template <class Stream>
Stream Session<Stream>::make_stream(tcp::socket&& socket, const SessionEnv& env) {
  if constexpr (kTls) {
    return make_tls_stream(std::move(socket), env);
  } else {
    return std::move(socket);
  }
}

template <class Stream>
Session<Stream>::Session(tcp::socket&& socket, const SessionEnv& env, IoWorker& worker)
    : stream_(make_stream(std::move(socket), env)),
      timer_(stream_.get_executor()),
      watchdog_(stream_.get_executor()),
      watchdog_period_(std::min({env.read_timeout, env.idle_timeout, env.write_timeout})),
      env_(env),
      worker_(worker),
      random_(random_seed(this)) {}

template <class Stream>
Session<Stream>::~Session() {
  // A session destroyed with its request unanswered (io_context torn down) must not hold
  // the shutdown drain forever.
  if (in_flight_) env_.in_flight->fetch_sub(1, std::memory_order_relaxed);
}

template <class Stream>
void Session<Stream>::run() {
  beast::error_code ec;
  socket().set_option(tcp::no_delay(true), ec);  // best effort: a failure only costs latency
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&Session<Stream>::start, shared_from_this()));
}

template <class Stream>
void Session<Stream>::start() {
  out_.reserve(4);
  worker_.connections.fetch_add(1, std::memory_order_relaxed);
  arm_watchdog(Clock::now() + watchdog_period_);
  if constexpr (kTls) {
    // A client that connects and never finishes the handshake is dropped like a slowloris.
    set_deadline(Clock::now() + env_.read_timeout);
    start_handshake();
  } else {
    start_request();
  }
}

template <class Stream>
void Session<Stream>::on_handshake(beast::error_code ec) {
  if (timed_out_) return env_.log->debug("handshake timeout: closing");
  if (ec) {
    // A client's mistake (plain HTTP to this port, no common version or cipher, an unknown CA):
    // one line at debug, not a warning per bad client.
    return env_.log->debug("handshake: {}", ec.message());
  }
  if constexpr (kTls) {  // only a TlsStream handshakes; the plain instantiation never gets here
    if (note_handshake()) return hand_over_to_h2();
  }
  start_request();
}

// The H2Session takes the stream and the bytes read so far; this Session ends when the
// handler calling this returns (nothing else is pending but the watchdog, which holds it weakly).
template <class Stream>
void Session<Stream>::hand_over_to_h2() {
  handed_over_ = true;
  watchdog_.cancel();
  auto h2 = std::make_shared<H2Session<Stream>>(std::move(stream_), env_, worker_);
  h2->start(buffer_.data());
}

// --- timeouts ----------------------------------------------------------------------------

template <class Stream>
void Session<Stream>::arm_watchdog(Clock::time_point at) {
  target::arm_watchdog(watchdog_, at, weak_from_this(), &Session<Stream>::on_watchdog);
}

template <class Stream>
void Session<Stream>::on_watchdog(beast::error_code ec) {
  // Cancelled (re-armed sooner, or the session ended), or the stream belongs to an H2Session.
  if (ec || handed_over_ || !socket().is_open()) return;
  const auto now = Clock::now();
  if (now >= deadline_) {
    timed_out_ = true;
    beast::error_code ignored;
    socket().close(ignored);  // the pending operation completes with operation_aborted
    return;
  }
  arm_watchdog(std::min(deadline_, now + watchdog_period_));
}

// --- reading -----------------------------------------------------------------------------

template <class Stream>
void Session<Stream>::start_request() {
  parser_.emplace();
  parser_->header_limit(env_.header_limit);
  parser_->body_limit(env_.body_limit);
  parser_->eager(true);
  request_started_ = false;
  parse_buffered();
}

template <class Stream>
void Session<Stream>::parse_buffered() {
  if (sniff_preface_ && buffer_.size() != 0) {
    switch (match_preface(buffer_.data())) {
      case Preface::whole:
        return hand_over_to_h2();
      case Preface::partial:
        if (!request_started_) {
          request_started_ = true;
          set_deadline(Clock::now() + env_.read_timeout);
        }
        return do_read();
      case Preface::absent:
        sniff_preface_ = false;
        break;
    }
  }
  while (buffer_.size() != 0) {
    if (!request_started_) {
      request_started_ = true;
      set_deadline(Clock::now() + env_.read_timeout);
    }
    beast::error_code ec;
    const auto used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) break;
    if (ec == http::error::header_limit) return answer_error(http::status::request_header_fields_too_large);
    if (ec == http::error::body_limit) return answer_error(http::status::payload_too_large);
    if (ec) return answer_error(http::status::bad_request);
    if (parser_->is_done()) return on_request();
    if (used == 0) break;
  }
  do_read();
}

template <class Stream>
void Session<Stream>::do_read() {
  if (!request_started_) set_deadline(Clock::now() + env_.idle_timeout);
  stream_.async_read_some(buffer_.prepare(kReadChunk),
                          beast::bind_front_handler(&Session<Stream>::on_read, shared_from_this()));
}

template <class Stream>
void Session<Stream>::on_read(beast::error_code ec, std::size_t bytes) {
  buffer_.commit(bytes);
  if (timed_out_) {
    // Idle too long between requests, or a request that trickles in (slowloris): drop it.
    env_.log->debug("{} timeout: closing", request_started_ ? "read" : "idle");
    return;
  }
  if (ec == net::error::eof) {                 // over TLS: the client's close_notify
    if (!request_started_) return do_close();  // the client closed between requests
    return;                                    // half a request then EOF: nobody waits for an answer
  }
  if (is_tls_truncation(ec)) return;  // TCP closed without close_notify: nobody left
  if (ec) return fail(ec, "read");
  parse_buffered();
}

template <class Stream>
void Session<Stream>::on_request() {
  const auto& req = *parser_;
  in_flight_ = true;
  env_.in_flight->fetch_add(1, std::memory_order_relaxed);
  http10_ = req.version() == 10;
  keep_alive_ = req.keep_alive();
  head_request_ = req.head();
  error_response_ = {};
  stats_ = req.stats();
  custom_ = stats_ || req.knobs().any();
  set_deadline(Clock::time_point::max());  // nothing to read or write until the response is ready

  answer_ = decide_answer(stats_, req.knobs(), env_, random_);
  if (answer_.kind != Answer::Kind::regular) return do_write();
  if (answer_.delay.count() == 0) return hold_or_write();
  timer_.expires_after(answer_.delay);
  timer_.async_wait(beast::bind_front_handler(&Session<Stream>::on_delay, shared_from_this()));
}

template <class Stream>
void Session<Stream>::on_delay(beast::error_code ec) {
  if (ec) return fail(ec, "delay");
  hold_or_write();
}

template <class Stream>
void Session<Stream>::hold_or_write() {
  if (env_.stall->enabled()) {
    if (auto until = env_.stall->hold_until(Clock::now())) {
      timer_.expires_at(*until);
      return timer_.async_wait(beast::bind_front_handler(&Session<Stream>::on_hold, shared_from_this()));
    }
  }
  do_write();
}

template <class Stream>
void Session<Stream>::on_hold(beast::error_code ec) {
  if (ec) return fail(ec, "stall");
  do_write();
}

template <class Stream>
void Session<Stream>::answer_error(http::status status) {
  env_.log->debug("malformed request: answering {}", static_cast<unsigned>(status));
  in_flight_ = true;
  env_.in_flight->fetch_add(1, std::memory_order_relaxed);
  stats_ = false;
  error_response_ = env_.responses->error(status);
  do_write();
}

// --- writing -----------------------------------------------------------------------------

template <class Stream>
bool Session<Stream>::build_response() {
  out_.clear();
  if (!error_response_.empty()) {
    out_.push_back(net::buffer(error_response_.data(), error_response_.size()));
    return true;
  }
  // Decided at write time, not read time, so a shutdown during the delay closes the connection.
  const bool keep = keep_alive_ && !env_.stopping->load(std::memory_order_relaxed);
  if (!custom_) {
    const auto canned = env_.responses->ok(http10_, keep, head_request_);
    out_.push_back(net::buffer(canned.bytes.data(), canned.bytes.size()));
    if (!canned.tail.empty()) out_.push_back(net::buffer(canned.tail.data(), canned.tail.size()));
    return !keep;
  }
  head_.clear();
  const auto content = answer_content(answer_, parser_->knobs(), env_, custom_text_);
  append_head(head_, content.status, http10_, keep, content.length, content.content_type);
  out_.push_back(net::buffer(head_));
  if (head_request_ || content.length.value_or(0) == 0) return !keep;
  if (!content.filler) {
    out_.push_back(net::buffer(content.bytes.data(), content.bytes.size()));
    return !keep;
  }
  const auto block = Filler::block();
  for (std::uint64_t left = *content.length; left > 0;) {
    const auto n = std::min<std::uint64_t>(left, block.size());
    out_.push_back(net::buffer(block.data(), n));
    left -= n;
  }
  return !keep;
}

template <class Stream>
void Session<Stream>::do_write() {
  close_after_write_ = build_response();
  set_deadline(Clock::now() + env_.write_timeout);
  auto handler = beast::bind_front_handler(&Session<Stream>::on_write, shared_from_this());
  if (out_.size() == 1) return net::async_write(stream_, out_.front(), std::move(handler));
  net::async_write(stream_, out_, std::move(handler));
}

template <class Stream>
void Session<Stream>::on_write(beast::error_code ec, std::size_t) {
  in_flight_ = false;
  env_.in_flight->fetch_sub(1, std::memory_order_relaxed);
  if (timed_out_) return env_.log->debug("write timeout: closing");
  if (ec) return fail(ec, "write");
  if (!stats_) worker_.responses_sent.fetch_add(1, std::memory_order_relaxed);
  stats_ = false;
  custom_text_.clear();
  if (close_after_write_) return do_close();
  start_request();
}

template <class Stream>
void Session<Stream>::do_close() {
  if constexpr (kTls) {
    start_tls_shutdown();
  } else {
    close_tcp();
  }
}

template <class Stream>
void Session<Stream>::on_tls_shutdown(beast::error_code ec) {
  if (ec || timed_out_) return;  // the peer is gone: nothing to linger for
  close_tcp();
}

template <class Stream>
void Session<Stream>::close_tcp() {
  beast::error_code ec;
  socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return;  // peer already gone
  // The linger is short: re-arm the watchdog for it rather than wait up to a period.
  set_deadline(Clock::now() + env_.linger_timeout);
  watchdog_.cancel();
  arm_watchdog(deadline_);
  do_linger();
}

template <class Stream>
void Session<Stream>::do_linger() {
  // Discard what the client still sends until it closes too (or the linger timeout ends), so
  // the close is a FIN after our response and not a reset racing it. Over TLS too, the bytes are
  // read from the TCP socket under the TLS layer: whatever they are, they are dropped.
  buffer_.clear();
  socket().async_read_some(buffer_.prepare(4096),
                           beast::bind_front_handler(&Session<Stream>::on_linger, shared_from_this()));
}

template <class Stream>
void Session<Stream>::on_linger(beast::error_code ec, std::size_t) {
  if (ec || timed_out_) return;  // EOF, timeout or reset: the session ends here
  do_linger();
}

template <class Stream>
void Session<Stream>::fail(beast::error_code ec, const char* what) {
  log_io_failure(*env_.log, ec, what);
}

}  // namespace loadlab::target
