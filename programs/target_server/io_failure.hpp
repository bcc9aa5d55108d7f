#pragma once
// What Session and H2Session share around their I/O: how a failed operation is logged, and the
// lazy watchdog's arming.
#include <spdlog/logger.h>

#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstring>
#include <memory>

namespace loadlab::target {

// A TLS stream's TCP connection closed without the peer's close_notify
// (boost::asio::ssl::error::stream_truncated), known by its category's name and value: the plain
// family includes no asio::ssl header, each of which drags OpenSSL's error strings in.
inline bool is_tls_truncation(const boost::beast::error_code& ec) {
  return ec.value() == 1 && std::strcmp(ec.category().name(), "asio.ssl.stream") == 0;
}

// The peer left or we closed: one line at debug. Anything else is a warning.
inline void log_io_failure(spdlog::logger& log, boost::beast::error_code ec, const char* what) {
  namespace net = boost::asio;
  if (ec == net::error::operation_aborted || ec == net::error::connection_reset ||
      ec == net::error::broken_pipe || is_tls_truncation(ec)) {
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
