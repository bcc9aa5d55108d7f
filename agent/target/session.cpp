#include "session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

Session::Session(tcp::socket&& socket, const SessionEnv& env, std::atomic<std::uint64_t>& responses_sent)
    : stream_(std::move(socket)),
      timer_(stream_.get_executor()),
      env_(env),
      responses_sent_(responses_sent) {}

Session::~Session() {
  // A session destroyed with its request unanswered (io_context torn down) must not hold
  // the shutdown drain forever.
  if (in_flight_) env_.in_flight->fetch_sub(1, std::memory_order_relaxed);
}

void Session::run() {
  beast::error_code ec;
  stream_.socket().set_option(tcp::no_delay(true), ec);  // best effort: a failure only costs latency
  net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::do_read, shared_from_this()));
}

void Session::do_read() {
  parser_.emplace();
  parser_->header_limit(env_.header_limit);
  parser_->body_limit(env_.body_limit);
  stream_.expires_after(env_.read_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Session::on_read, shared_from_this()));
}

void Session::on_read(beast::error_code ec, std::size_t) {
  if (ec == http::error::end_of_stream) return do_close();  // client closed between requests
  if (ec == beast::error::timeout || ec == http::error::partial_message ||
      ec == net::error::connection_reset || ec == net::error::operation_aborted) {
    return;  // idle timeout, half a request then EOF, or reset: nobody is waiting for an answer
  }
  const bool malformed = ec && ec.category() == http::make_error_code(http::error::bad_method).category();
  if (ec && !malformed) return fail(ec, "read");
  in_flight_ = true;
  env_.in_flight->fetch_add(1, std::memory_order_relaxed);
  if (ec == http::error::header_limit) return answer_error(http::status::request_header_fields_too_large);
  if (ec == http::error::body_limit) return answer_error(http::status::payload_too_large);
  if (malformed) return answer_error(http::status::bad_request);

  const auto& req = parser_->get();
  http10_ = req.version() == 10;
  keep_alive_ = req.keep_alive();
  head_ = req.method() == http::verb::head;
  error_response_ = {};
  if (env_.delay.count() == 0) return do_write();
  timer_.expires_after(env_.delay);
  timer_.async_wait(beast::bind_front_handler(&Session::on_delay, shared_from_this()));
}

void Session::on_delay(beast::error_code ec) {
  if (ec) return fail(ec, "delay");
  do_write();
}

void Session::answer_error(http::status status) {
  env_.log->debug("malformed request: answering {}", static_cast<unsigned>(status));
  error_response_ = env_.responses->error(status);
  do_write();
}

void Session::do_write() {
  // Decided at write time, not read time, so a shutdown during the delay closes the connection.
  if (!error_response_.empty()) {
    response_ = error_response_;
    close_after_write_ = true;
  } else {
    const bool keep = keep_alive_ && !env_.stopping->load(std::memory_order_relaxed);
    response_ = env_.responses->ok(http10_, keep, head_);
    close_after_write_ = !keep;
  }
  stream_.expires_after(env_.write_timeout);
  net::async_write(stream_, net::buffer(response_.data(), response_.size()),
                   beast::bind_front_handler(&Session::on_write, shared_from_this()));
}

void Session::on_write(beast::error_code ec, std::size_t) {
  in_flight_ = false;
  env_.in_flight->fetch_sub(1, std::memory_order_relaxed);
  if (ec) return fail(ec, "write");
  responses_sent_.fetch_add(1, std::memory_order_relaxed);
  if (close_after_write_) return do_close();
  do_read();
}

void Session::do_close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return;  // peer already gone
  do_linger();
}

void Session::do_linger() {
  // Discard what the client still sends until it closes too (or the linger timeout ends), so
  // the close is a FIN after our response and not a reset racing it.
  buffer_.clear();
  stream_.expires_after(env_.linger_timeout);
  stream_.async_read_some(buffer_.prepare(4096),
                          beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::on_linger(beast::error_code ec, std::size_t) {
  if (ec) return;  // EOF, timeout or reset: the session ends here
  do_linger();
}

void Session::fail(beast::error_code ec, const char* what) {
  if (ec == net::error::operation_aborted || ec == beast::error::timeout ||
      ec == net::error::connection_reset || ec == net::error::broken_pipe) {
    env_.log->debug("{}: {}", what, ec.message());
    return;
  }
  env_.log->warn("{}: {}", what, ec.message());
}

}  // namespace loadlab::target
