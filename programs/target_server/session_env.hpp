#pragma once
// What every session of one server shares. Owned by the Server, which outlives its sessions.
#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "canned_responses.hpp"
#include "io_worker.hpp"
#include "knobs.hpp"
#include "stall.hpp"

namespace boost::asio::ssl {
class context;  // OpenSSL's, through loadlab_target_secure only
}  // namespace boost::asio::ssl

namespace loadlab::target {

class SecureTransport;  // secure_transport.hpp

struct SessionEnv {
  const CannedResponses* responses = nullptr;  // the configured status and body
  DelaySpec delay;                             // default delay; x-loadlab-delay-ms overrides
  std::chrono::nanoseconds work{0};            // default CPU work; x-loadlab-work-us overrides
  Stall* stall = nullptr;
  // From a request's first byte to its last: a slowloris peer is dropped when this passes.
  std::chrono::steady_clock::duration read_timeout = std::chrono::seconds(10);
  // Between requests on a keep-alive connection.
  std::chrono::steady_clock::duration idle_timeout = std::chrono::seconds(60);
  std::chrono::steady_clock::duration write_timeout = std::chrono::seconds(30);
  // After a closing response, how long we keep reading (and discarding) so that unread client
  // bytes do not turn our close into a reset that would destroy the response in flight.
  std::chrono::steady_clock::duration linger_timeout = std::chrono::seconds(1);
  std::uint32_t header_limit = 8 * 1024;
  std::uint64_t body_limit = 1024 * 1024;
  // Set once by Server::initiate_shutdown(); sessions then answer with `Connection: close`.
  const std::atomic<bool>* stopping = nullptr;
  // Requests read but not yet answered, across all io threads; shutdown waits for zero.
  std::atomic<std::int64_t>* in_flight = nullptr;
  const IoWorkers* workers = nullptr;  // for the stats endpoint's counts
  // Non-null: connections speak TLS (the handshake must end within read_timeout), started by
  // `secure`, whose context `tls` is.
  const SecureTransport* secure = nullptr;
  boost::asio::ssl::context* tls = nullptr;
  spdlog::logger* log = nullptr;
};

}  // namespace loadlab::target
