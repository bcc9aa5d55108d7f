#pragma once
// loadlab_target_secure's SecureTransport: TLS sessions over OpenSSL (HTTPS; h2 or http/1.1 by
// ALPN), no HTTP/3. loadlab_target_h3 extends it with QUIC (tls_quic_transport.hpp).
#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "secure_transport.hpp"

namespace loadlab::target {

class TlsTransport : public SecureTransport {
 public:
  explicit TlsTransport(std::shared_ptr<boost::asio::ssl::context> tls) : tls_(std::move(tls)) {}
  boost::asio::ssl::context& tls_context() const override { return *tls_; }
  void start_session(boost::asio::ip::tcp::socket socket, const SessionEnv& env,
                     IoWorker& worker) const override;
  bool serves_h3() const override { return false; }
  std::unique_ptr<DatagramServer> make_h3_server(IoWorker&, const SessionEnv&,
                                                 const H3Limits&) const override {
    return nullptr;
  }

 private:
  std::shared_ptr<boost::asio::ssl::context> tls_;
};

}  // namespace loadlab::target
