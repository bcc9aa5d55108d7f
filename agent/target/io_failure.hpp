#pragma once
// What Session and H2Session share around their I/O: how a failed operation is logged, and the
// lazy watchdog's arming.
#include <spdlog/logger.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <memory>

namespace loadlab::target {

// The peer left or we closed: one line at debug. Anything else is a warning.
inline void log_io_failure(spdlog::logger& log, boost::beast::error_code ec, const char* what) {
  namespace net = boost::asio;
  if (ec == net::error::operation_aborted || ec == net::error::connection_reset ||
      ec == net::error::broken_pipe || ec == net::ssl::error::stream_truncated) {
    log.debug("{}: {}", what, ec.message());
    return;
  }
  log.warn("{}: {}", what, ec.message());
}

// Arms `watchdog` to call `session->*on_watchdog` at `at`, holding the session weakly: the
// watchdog alone must not keep a finished session alive.
template <class Session>
void arm_watchdog(boost::asio::steady_timer& watchdog, std::chrono::steady_clock::time_point at,
                  std::weak_ptr<Session> session, void (Session::*on_watchdog)(boost::beast::error_code)) {
  watchdog.expires_at(at);
  watchdog.async_wait([session = std::move(session), on_watchdog](boost::beast::error_code ec) {
    if (auto self = session.lock()) ((*self).*on_watchdog)(ec);
  });
}

}  // namespace loadlab::target
