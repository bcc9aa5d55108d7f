#include "connection.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>
#include <limits>

namespace loadlab::load {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

// Handlers capture a raw `this`: the worker owns its connections and destroys them only
// after its io_context has run out of work, i.e. after every handler has run.

Connection::Connection(Worker& worker, int index)
    : worker_(worker),
      index_(index),
      transport_(worker.io(), worker.plan().tls),
      dialer_(worker_, transport_) {}

void Connection::start() {
  if ((preconnect_ = connects_first(worker_))) return do_connect();
  next();
}

void Connection::stop() {
  stopped_ = true;
  close();
  if (waiting_) {  // no operation pending that would end the loop
    waiting_ = false;
    end();
  }
}

void Connection::check_deadline(Clock::time_point now) {
  dialer_.check_deadline(now);
  if (now > deadline_ && !timed_out_) {
    timed_out_ = true;
    transport_.close();
  }
}

// Begins the next request, waits for its slot (open loop), or ends the loop.
void Connection::next() {
  if (stopped_ || worker_.stopping()) return end();
  const RunPlan& plan = worker_.plan();
  auto now = Clock::now();
  if (!worker_.open_loop()) {
    if (plan.measure_end && now >= *plan.measure_end) return end();
    return begin(now, now);
  }
  worker_.resume_due(now);  // other connections whose slots came while this one was busy
  auto due = worker_.schedule().time_of(index_, turn_);
  if (plan.measure_end && due >= *plan.measure_end) return end();
  if (due > now) {
    waiting_ = true;
    return worker_.wait_for_slot(due, index_);
  }
  begin(due, now);
}

void Connection::resume(Clock::time_point now) {
  if (!waiting_) return;  // stopped while waiting
  waiting_ = false;
  begin(worker_.schedule().time_of(index_, turn_), now);
}

// `origin`: the intended send time in open loop; now in closed loop (then re-set at the write).
void Connection::begin(Clock::time_point origin, Clock::time_point now) {
  origin_ = origin;
  ++turn_;
  measured_ = origin >= worker_.plan().measure_start;
  if (measured_ && !worker_.take_ticket(now)) return end();
  if (connected_)
    do_write();
  else
    do_connect();
}

void Connection::do_connect() {
  buffer_.clear();
  dialer_.dial([this](std::optional<ErrorKind> failure) { on_connect(failure); });
}

void Connection::on_connect(std::optional<ErrorKind> failure) {
  cost_ = dialer_.cost();
  if (failure) {
    if (preconnect_) {  // no request was lost: connect again when the first slot comes
      preconnect_ = false;
      close();
      return next();
    }
    return fail(*failure, {});
  }
  ready();
}

void Connection::ready() {
  connected_ = true;
  if (preconnect_) {
    preconnect_ = false;
    return next();
  }
  do_write();
}

void Connection::do_write() {
  timed_out_ = false;
  sent_ = Clock::now();
  first_byte_ = {};
  if (!worker_.open_loop()) origin_ = sent_;
  deadline_ = sent_ + worker_.plan().timeout;
  transport_.async_write(asio::buffer(worker_.plan().request),
                         [this](const error_code& ec, std::size_t) { on_write(ec); });
}

void Connection::on_write(const error_code& ec) {
  if (ec) return fail(timed_out_ ? ErrorKind::kTimeout : ErrorKind::kWrite, ec);
  do_read();
}

// The read loop is Beast's http::async_read unrolled: read_some into the connection's
// buffer, feed the parser, repeat until the message is done. One level of handler instead
// of three composed operations per read.
void Connection::do_read() {
  new_parser();
  response_bytes_ = 0;
  if (buffer_.size() > 0) {  // bytes beyond the previous response
    first_byte_ = Clock::now();
    return parse();
  }
  read_some();
}

void Connection::new_parser() {
  parser_.emplace();
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  if (worker_.plan().head) parser_->skip(true);
}

void Connection::read_some() {
  constexpr std::size_t kReadSize = 16 * 1024;  // untouched pages cost no RSS
  transport_.async_read_some(buffer_.prepare(kReadSize),
                             [this](const error_code& ec, std::size_t n) { on_read_some(ec, n); });
}

void Connection::on_read_some(const error_code& ec, std::size_t n) {
  // A TLS peer that closes without close_notify (most servers after "Connection: close")
  // ends the stream as a TCP peer does with a FIN.
  if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
    // A body delimited by the end of the connection is complete now; anything else is cut.
    if (!parser_->got_some()) return on_read(http::error::end_of_stream, 0);
    error_code eof_ec;
    parser_->put_eof(eof_ec);
    return on_read(eof_ec, response_bytes_);
  }
  if (ec) return on_read(ec, 0);
  if (first_byte_ == Clock::time_point{}) first_byte_ = Clock::now();
  buffer_.commit(n);
  parse();
}

void Connection::parse() {
  error_code ec;
  while (buffer_.size() > 0) {
    std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    response_bytes_ += used;
    if (ec == http::error::need_more) break;
    if (ec) return on_read(ec, 0);
    if (parser_->is_done()) {
      // An interim response (100 Continue, 103 Early Hints; RFC 9110 §15.2) comes before
      // the request's answer: read on. 101 ends the exchange (nothing here asks to upgrade).
      const int status = parser_->status();
      if (status < 100 || status >= 200 || status == 101) return on_read({}, response_bytes_);
      new_parser();
      continue;
    }
    if (used == 0) break;
  }
  read_some();
}

void Connection::on_read(const error_code& ec, std::size_t bytes) {
  auto done = Clock::now();
  deadline_ = Clock::time_point::max();
  if (ec) {
    ErrorKind kind = ErrorKind::kRead;
    if (timed_out_)
      kind = ErrorKind::kTimeout;
    else if (ec.category() == http::make_error_code(http::error::bad_version).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message)
      kind = ErrorKind::kBadResponse;  // the peer sent something that is not HTTP/1.1
    return fail(kind, ec);
  }
  if (first_byte_ == Clock::time_point{}) first_byte_ = done;  // an end of stream was the answer
  worker_.record_response(measured_, origin_, sent_, first_byte_, done, parser_->status(), bytes,
                          take_cost());
  if (transport_.secure() && worker_.plan().tls->resume()) transport_.keep_session();
  if (!worker_.plan().keep_alive || !parser_->keep_alive()) close();
  next();
}

void Connection::fail(ErrorKind kind, const error_code& ec) {
  close();
  // A stop discards the request in flight: it was cut short by us, not by the target.
  if (stopped_ || worker_.stopping()) return end();
  worker_.record_failure(measured_, origin_, Clock::now(), kind, take_cost());
  next();
}

void Connection::close() {
  transport_.close();
  connected_ = false;
}

void Connection::end() {
  if (ended_) return;
  ended_ = true;
  deadline_ = Clock::time_point::max();
  close();
  worker_.on_connection_done();
}

}  // namespace loadlab::load
