#pragma once
// Connection's definitions (connection.hpp), for each transport's instantiation: PlainTransport's
// in connection.cpp (loadlab_load), TlsTransport's in tls_connections.cpp (loadlab_load_secure).
#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/beast/http/error.hpp>
#include <limits>

#include "connection.hpp"

namespace loadlab::load {

// Handlers capture a raw `this`: the worker owns its connections and destroys them only
// after its io_context has run out of work, i.e. after every handler has run.

template <class Transport>
Connection<Transport>::Connection(Worker& worker, int index)
    : worker_(worker), index_(index), transport_(worker.io(), worker.plan()), dialer_(worker_, transport_) {}

template <class Transport>
void Connection<Transport>::start() {
  if ((preconnect_ = connects_first(worker_))) return do_connect();
  next();
}

template <class Transport>
void Connection<Transport>::stop() {
  stopped_ = true;
  close();
  if (waiting_) {  // no operation pending that would end the loop
    waiting_ = false;
    end();
  }
}

template <class Transport>
void Connection<Transport>::check_deadline(Clock::time_point now) {
  dialer_.check_deadline(now);
  if (now > deadline_ && !timed_out_) {
    timed_out_ = true;
    transport_.close();
  }
}

// Begins the next request, waits for its slot (open loop), or ends the loop.
template <class Transport>
void Connection<Transport>::next() {
  if (stopped_ || worker_.stopping()) return end();
  const RunPlan& plan = worker_.plan();
  auto now = Clock::now();
  if (!worker_.open_loop()) {
    if (plan.measure_end() && now >= *plan.measure_end()) return end();
    return begin(now, now);
  }
  worker_.resume_due(now);  // other connections whose slots came while this one was busy
  if (!slot_) slot_ = worker_.take_slot();
  const auto due = *slot_;
  if (plan.measure_end() && due >= *plan.measure_end()) return end();
  if (!worker_.slot_due(due, now)) {
    waiting_ = true;
    return worker_.wait_for_slot(due, index_);
  }
  begin(due, now);
}

template <class Transport>
void Connection<Transport>::resume(Clock::time_point now) {
  if (!waiting_) return;  // stopped while waiting
  waiting_ = false;
  begin(*slot_, now);
}

// `origin`: the intended send time in open loop; now in closed loop (then re-set at the write).
// Open loop, a slot begun early (--pace-granularity): latency counts from now, its connect or
// its write, never from its later slot; its ticket is dated at its slot, where the pace put it.
template <class Transport>
void Connection<Transport>::begin(Clock::time_point origin, Clock::time_point now) {
  origin_ = Worker::latency_origin(origin, now);
  slot_.reset();
  measured_ = origin >= worker_.plan().measure_start();
  if (measured_ && !worker_.take_ticket(std::max(origin, now))) return end();
  if (connected_)
    do_write();
  else
    do_connect();
}

template <class Transport>
void Connection<Transport>::do_connect() {
  buffer_.clear();
  dialer_.dial([this](std::optional<ErrorKind> failure) { on_connect(failure); });
}

template <class Transport>
void Connection<Transport>::on_connect(std::optional<ErrorKind> failure) {
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

template <class Transport>
void Connection<Transport>::ready() {
  connected_ = true;
  if (preconnect_) {
    preconnect_ = false;
    return next();
  }
  do_write();
}

template <class Transport>
void Connection<Transport>::do_write() {
  timed_out_ = false;
  sent_ = Clock::now();
  first_byte_ = {};
  if (!worker_.open_loop()) origin_ = sent_;
  deadline_ = sent_ + worker_.plan().timeout;
  boost::asio::const_buffer request = boost::asio::buffer(worker_.plan().request);
  if constexpr (!Transport::kSecure) {
    boost::system::error_code ec;
    request += transport_.write_now(request, ec);
    if (request.size() == 0 || (ec && ec != boost::asio::error::would_block)) return on_write(ec);
  }
  transport_.async_write(request, [this](const boost::system::error_code& ec, std::size_t) { on_write(ec); });
}

template <class Transport>
void Connection<Transport>::on_write(const boost::system::error_code& ec) {
  if (ec) return fail(timed_out_ ? ErrorKind::kTimeout : ErrorKind::kWrite, ec);
  do_read();
}

// The read loop is Beast's http::async_read unrolled: read_some into the connection's
// buffer, feed the parser, repeat until the message is done. One level of handler instead
// of three composed operations per read.
template <class Transport>
void Connection<Transport>::do_read() {
  parser_.reset();  // made when Beast's parser reads the response (parse())
  response_bytes_ = 0;
  if (buffer_.size() > 0) {  // bytes beyond the previous response
    first_byte_ = Clock::now();
    return parse();
  }
  read_some();
}

template <class Transport>
void Connection<Transport>::new_parser() {
  parser_.emplace();
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  if (worker_.plan().head) parser_->skip(true);
}

template <class Transport>
void Connection<Transport>::read_some() {
  constexpr std::size_t kReadSize = 16 * 1024;  // untouched pages cost no RSS
  transport_.async_read_some(buffer_.prepare(kReadSize), [this](const boost::system::error_code& ec,
                                                                std::size_t n) { on_read_some(ec, n); });
}

template <class Transport>
void Connection<Transport>::on_read_some(const boost::system::error_code& ec, std::size_t n) {
  // A FIN, or a TLS peer that closes without close_notify (most servers after "Connection:
  // close").
  if (Transport::ended(ec)) {
    // A body delimited by the end of the connection is complete now; anything else is cut.
    // (No parser yet: no byte of the response came.)
    if (!parser_ || !parser_->got_some()) return on_read(boost::beast::http::error::end_of_stream, 0);
    boost::system::error_code eof_ec;
    parser_->put_eof(eof_ec);
    return on_read(eof_ec, response_bytes_);
  }
  if (ec) return on_read(ec, 0);
  if (first_byte_ == Clock::time_point{}) first_byte_ = Clock::now();
  buffer_.commit(n);
  parse();
}

template <class Transport>
void Connection<Transport>::parse() {
  if (!parser_) {
    // The common case in one pass; anything it does not take goes to Beast's parser.
    if (!worker_.plan().head) {
      const auto bytes = buffer_.data();
      if (auto r = worker_.response_reader().read({static_cast<const char*>(bytes.data()), bytes.size()})) {
        buffer_.consume(r->size);
        status_ = r->status;
        keep_alive_ = r->keep_alive;
        return on_read({}, r->size);
      }
    }
    new_parser();
  }
  boost::system::error_code ec;
  while (buffer_.size() > 0) {
    std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    response_bytes_ += used;
    if (ec == boost::beast::http::error::need_more) break;
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

template <class Transport>
void Connection<Transport>::on_read(const boost::system::error_code& ec, std::size_t bytes) {
  auto done = Clock::now();
  deadline_ = Clock::time_point::max();
  if (ec) {
    ErrorKind kind = ErrorKind::kRead;
    if (timed_out_)
      kind = ErrorKind::kTimeout;
    else if (ec.category() ==
                 boost::beast::http::make_error_code(boost::beast::http::error::bad_version).category() &&
             ec != boost::beast::http::error::end_of_stream &&
             ec != boost::beast::http::error::partial_message)
      kind = ErrorKind::kBadResponse;  // the peer sent something that is not HTTP/1.1
    return fail(kind, ec);
  }
  if (first_byte_ == Clock::time_point{}) first_byte_ = done;  // an end of stream was the answer
  if (parser_) {                                               // Beast's parser read it
    status_ = parser_->status();
    keep_alive_ = parser_->keep_alive();
  }
  worker_.record_response(measured_, origin_, sent_, first_byte_, done, status_, bytes, take_cost());
  if constexpr (Transport::kSecure) transport_.response_read();
  if (!worker_.plan().keep_alive || !keep_alive_) close();
  next();
}

template <class Transport>
void Connection<Transport>::fail(ErrorKind kind, const boost::system::error_code& ec) {
  close();
  // A stop discards the request in flight: it was cut short by us, not by the target.
  if (stopped_ || worker_.stopping()) return end();
  worker_.record_failure(measured_, origin_, Clock::now(), kind, take_cost());
  next();
}

template <class Transport>
void Connection<Transport>::close() {
  transport_.close();
  connected_ = false;
}

template <class Transport>
void Connection<Transport>::end() {
  if (ended_) return;
  ended_ = true;
  deadline_ = Clock::time_point::max();
  close();
  worker_.on_connection_done();
}

}  // namespace loadlab::load
