#include "connection.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <limits>

#include "worker.hpp"

namespace loadlab::load {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

// Handlers capture a raw `this`: the worker owns its connections and destroys them only
// after its io_context has run out of work, i.e. after every handler has run.

Connection::Connection(Worker& worker) : worker_(worker), socket_(worker.io()) {}

void Connection::start() { next(); }

void Connection::stop() {
  stopped_ = true;
  close();
}

void Connection::check_deadline(Clock::time_point now) {
  if (now > deadline_ && !timed_out_) {
    timed_out_ = true;
    error_code ignored;
    socket_.close(ignored);
  }
}

// Begins the next request, or ends the loop.
void Connection::next() {
  if (stopped_ || worker_.stopping()) return end();
  const RunPlan& plan = worker_.plan();
  auto now = Clock::now();
  if (plan.measure_end && now >= *plan.measure_end) return end();
  measured_ = now >= plan.measure_start;
  if (measured_ && !worker_.take_ticket()) return end();
  if (connected_)
    do_write();
  else
    do_connect();
}

void Connection::do_connect() {
  timed_out_ = false;
  deadline_ = Clock::now() + worker_.plan().timeout;
  buffer_.clear();
  asio::async_connect(socket_, worker_.plan().endpoints,
                      [this](const error_code& ec, const asio::ip::tcp::endpoint&) { on_connect(ec); });
}

void Connection::on_connect(const error_code& ec) {
  deadline_ = Clock::time_point::max();
  if (ec) {
    if (first_connect_ && !stopped_) {
      first_connect_ = false;
      worker_.note_first_connect_failure(timed_out_ ? "connect timed out" : ec.message());
    }
    return fail(ErrorKind::kConnect, ec);
  }
  first_connect_ = false;
  connected_ = true;
  error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  worker_.note_connected();
  do_write();
}

void Connection::do_write() {
  timed_out_ = false;
  sent_ = Clock::now();
  deadline_ = sent_ + worker_.plan().timeout;
  asio::async_write(socket_, asio::buffer(worker_.plan().request),
                    [this](const error_code& ec, std::size_t) { on_write(ec); });
}

void Connection::on_write(const error_code& ec) {
  if (ec) return fail(timed_out_ ? ErrorKind::kTimeout : ErrorKind::kWrite, ec);
  do_read();
}

void Connection::do_read() {
  parser_.emplace();
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  if (worker_.plan().head) parser_->skip(true);
  http::async_read(socket_, buffer_, *parser_,
                   [this](const error_code& ec, std::size_t bytes) { on_read(ec, bytes); });
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
  auto latency_us = std::chrono::duration_cast<std::chrono::microseconds>(done - sent_).count();
  worker_.record_response(measured_, done, latency_us, parser_->status(), bytes);
  if (!worker_.plan().keep_alive || !parser_->keep_alive()) close();
  next();
}

void Connection::fail(ErrorKind kind, const error_code& ec) {
  close();
  // A stop discards the request in flight: it was cut short by us, not by the target.
  if (stopped_ || worker_.stopping()) return end();
  worker_.record_failure(measured_, Clock::now(), kind);
  next();
}

void Connection::close() {
  error_code ignored;
  socket_.close(ignored);
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
