#include "session.hpp"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>

#include "cpu_burn.hpp"

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::size_t kReadChunk = 16 * 1024;

std::uint64_t seed_for(const void* self) {
  return reinterpret_cast<std::uintptr_t>(self) ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

Session::Session(tcp::socket&& socket, const SessionEnv& env, std::atomic<std::uint64_t>& responses_sent)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      watchdog_(socket_.get_executor()),
      watchdog_period_(std::min({env.read_timeout, env.idle_timeout, env.write_timeout})),
      env_(env),
      responses_sent_(responses_sent),
      random_(seed_for(this)) {}

Session::~Session() {
  // A session destroyed with its request unanswered (io_context torn down) must not hold
  // the shutdown drain forever.
  if (in_flight_) env_.in_flight->fetch_sub(1, std::memory_order_relaxed);
}

void Session::run() {
  beast::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);  // best effort: a failure only costs latency
  net::dispatch(socket_.get_executor(), beast::bind_front_handler(&Session::start, shared_from_this()));
}

void Session::start() {
  out_.reserve(4);
  arm_watchdog(Clock::now() + watchdog_period_);
  start_request();
}

// --- timeouts ----------------------------------------------------------------------------

void Session::arm_watchdog(Clock::time_point at) {
  watchdog_.expires_at(at);
  // A weak reference: the watchdog alone must not keep a finished session alive.
  watchdog_.async_wait([weak = weak_from_this()](beast::error_code ec) {
    if (auto self = weak.lock()) self->on_watchdog(ec);
  });
}

void Session::on_watchdog(beast::error_code ec) {
  if (ec || !socket_.is_open()) return;  // cancelled (re-armed sooner, or the session ended)
  const auto now = Clock::now();
  if (now >= deadline_) {
    timed_out_ = true;
    beast::error_code ignored;
    socket_.close(ignored);  // the pending read or write completes with operation_aborted
    return;
  }
  arm_watchdog(std::min(deadline_, now + watchdog_period_));
}

// --- reading -----------------------------------------------------------------------------

void Session::start_request() {
  parser_.emplace();
  parser_->header_limit(env_.header_limit);
  parser_->body_limit(env_.body_limit);
  parser_->eager(true);
  request_started_ = false;
  parse_buffered();
}

void Session::parse_buffered() {
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

void Session::do_read() {
  if (!request_started_) set_deadline(Clock::now() + env_.idle_timeout);
  socket_.async_read_some(buffer_.prepare(kReadChunk),
                          beast::bind_front_handler(&Session::on_read, shared_from_this()));
}

void Session::on_read(beast::error_code ec, std::size_t bytes) {
  buffer_.commit(bytes);
  if (timed_out_) {
    // Idle too long between requests, or a request that trickles in (slowloris): drop it.
    env_.log->debug("{} timeout: closing", request_started_ ? "read" : "idle");
    return;
  }
  if (ec == net::error::eof) {
    if (!request_started_) return do_close();  // the client closed between requests
    return;                                    // half a request then EOF: nobody waits for an answer
  }
  if (ec) return fail(ec, "read");
  parse_buffered();
}

void Session::on_request() {
  const auto& req = *parser_;
  in_flight_ = true;
  env_.in_flight->fetch_add(1, std::memory_order_relaxed);
  http10_ = req.version() == 10;
  keep_alive_ = req.keep_alive();
  head_request_ = req.head();
  error_response_ = {};
  stats_ = req.stats();
  const auto& knobs = req.knobs();
  custom_ = stats_ || knobs.any();
  set_deadline(Clock::time_point::max());  // nothing to read or write until the response is ready

  if (stats_) return do_write();  // not delayed, stalled or counted: tests read it any time
  if (!knobs.error.empty()) {
    status_ = 400;
    custom_text_ = knobs.error + "\n";
    return do_write();
  }
  status_ = knobs.status.value_or(env_.responses->status());
  body_size_ = knobs.body_size;

  const auto now = Clock::now();
  if (env_.stall->enabled()) env_.stall->note_request(now);
  burn_cpu(knobs.work_us ? std::chrono::microseconds(*knobs.work_us) : env_.work);
  const DelaySpec& delay = knobs.delay ? *knobs.delay : env_.delay;
  if (delay.zero()) return hold_or_write();
  timer_.expires_after(sample_delay(delay, random_));
  timer_.async_wait(beast::bind_front_handler(&Session::on_delay, shared_from_this()));
}

void Session::on_delay(beast::error_code ec) {
  if (ec) return fail(ec, "delay");
  hold_or_write();
}

void Session::hold_or_write() {
  if (env_.stall->enabled()) {
    if (auto until = env_.stall->hold_until(Clock::now())) {
      timer_.expires_at(*until);
      return timer_.async_wait(beast::bind_front_handler(&Session::on_hold, shared_from_this()));
    }
  }
  do_write();
}

void Session::on_hold(beast::error_code ec) {
  if (ec) return fail(ec, "stall");
  do_write();
}

void Session::answer_error(http::status status) {
  env_.log->debug("malformed request: answering {}", static_cast<unsigned>(status));
  in_flight_ = true;
  env_.in_flight->fetch_add(1, std::memory_order_relaxed);
  stats_ = false;
  error_response_ = env_.responses->error(status);
  do_write();
}

// --- writing -----------------------------------------------------------------------------

bool Session::build_response() {
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
  if (stats_) {
    custom_text_ = "{\"requests\": " + std::to_string(count_requests(*env_.workers)) + "}\n";
    append_head(head_, 200, http10_, keep, custom_text_.size(), "application/json");
    head_ += custom_text_;
  } else if (status_ == 400 && !custom_text_.empty()) {  // a bad knob header
    append_head(head_, 400, http10_, keep, custom_text_.size());
    head_ += custom_text_;
  } else if (!status_has_body(status_)) {
    append_head(head_, status_, http10_, keep, std::nullopt);
  } else {
    const std::string& body = env_.responses->body();
    const std::uint64_t size = body_size_ ? *body_size_ : body.size();
    append_head(head_, status_, http10_, keep, size);
    if (!head_request_ && !body_size_) {
      out_.push_back(net::buffer(head_));
      if (!body.empty()) out_.push_back(net::buffer(body));
      return !keep;
    }
    if (!head_request_) {
      out_.push_back(net::buffer(head_));
      const auto block = Filler::block();
      for (std::uint64_t left = size; left > 0;) {
        const auto n = std::min<std::uint64_t>(left, block.size());
        out_.push_back(net::buffer(block.data(), n));
        left -= n;
      }
      return !keep;
    }
  }
  out_.push_back(net::buffer(head_));
  return !keep;
}

void Session::do_write() {
  close_after_write_ = build_response();
  set_deadline(Clock::now() + env_.write_timeout);
  auto handler = beast::bind_front_handler(&Session::on_write, shared_from_this());
  if (out_.size() == 1) return net::async_write(socket_, out_.front(), std::move(handler));
  net::async_write(socket_, out_, std::move(handler));
}

void Session::on_write(beast::error_code ec, std::size_t) {
  in_flight_ = false;
  env_.in_flight->fetch_sub(1, std::memory_order_relaxed);
  if (timed_out_) return env_.log->debug("write timeout: closing");
  if (ec) return fail(ec, "write");
  if (!stats_) responses_sent_.fetch_add(1, std::memory_order_relaxed);
  stats_ = false;
  custom_text_.clear();
  if (close_after_write_) return do_close();
  start_request();
}

void Session::do_close() {
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return;  // peer already gone
  // The linger is short: re-arm the watchdog for it rather than wait up to a period.
  set_deadline(Clock::now() + env_.linger_timeout);
  watchdog_.cancel();
  arm_watchdog(deadline_);
  do_linger();
}

void Session::do_linger() {
  // Discard what the client still sends until it closes too (or the linger timeout ends), so
  // the close is a FIN after our response and not a reset racing it.
  buffer_.clear();
  socket_.async_read_some(buffer_.prepare(4096),
                          beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::on_linger(beast::error_code ec, std::size_t) {
  if (ec || timed_out_) return;  // EOF, timeout or reset: the session ends here
  do_linger();
}

void Session::fail(beast::error_code ec, const char* what) {
  if (ec == net::error::operation_aborted || ec == net::error::connection_reset ||
      ec == net::error::broken_pipe) {
    env_.log->debug("{}: {}", what, ec.message());
    return;
  }
  env_.log->warn("{}: {}", what, ec.message());
}

}  // namespace loadlab::target
