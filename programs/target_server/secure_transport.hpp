#pragma once
// The target's TLS and QUIC families behind a narrow interface. loadlab_target (HTTP/1.1 and h2c)
// knows only this interface and links no TLS or QUIC library; loadlab_target_secure implements
// it over OpenSSL (TlsTransport: HTTPS, h2 by ALPN), loadlab_target_h3 adds HTTP/3 on the same
// port (make_tls_quic_transport: ngtcp2 + nghttp3 + GnuTLS). loadlab-target hands --tls over to
// loadlab-target-secure and --h3 to loadlab-target-h3.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/beast/core/error.hpp>
#include <cstdint>
#include <memory>

#include "h3_limits.hpp"
#include "io_worker.hpp"
#include "session_env.hpp"

namespace loadlab::target {

// HTTP/3 on a UDP socket of one io thread (H3Server), as the Server drives it.
class DatagramServer {
 public:
  virtual ~DatagramServer() = default;
  // Opens and binds. Called once, before run(), by the owning thread.
  virtual boost::beast::error_code listen(const boost::asio::ip::udp::endpoint& endpoint) = 0;
  // On the worker's thread.
  virtual void run() = 0;
  // On the worker's thread: no new connections; the open ones close once answered.
  virtual void initiate_shutdown() = 0;
  // Connections neither closed nor closing. Any thread.
  virtual std::int64_t live_connections() const = 0;
};

class SecureTransport {
 public:
  virtual ~SecureTransport() = default;
  // The TLS context every TLS session of the server shares (SessionEnv::tls).
  virtual boost::asio::ssl::context& tls_context() const = 0;
  // A TLS session (HTTPS; h2 or http/1.1 by ALPN) on an accepted socket, started on `worker`.
  virtual void start_session(boost::asio::ip::tcp::socket socket, const SessionEnv& env,
                             IoWorker& worker) const = 0;
  // Whether the server also serves HTTP/3, and its server on `worker` with `limits` (null when
  // it does not).
  virtual bool serves_h3() const = 0;
  virtual std::unique_ptr<DatagramServer> make_h3_server(IoWorker& worker, const SessionEnv& env,
                                                         const H3Limits& limits) const = 0;
};

}  // namespace loadlab::target
