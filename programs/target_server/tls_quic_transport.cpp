#include "tls_quic_transport.hpp"

#include "h3_server.hpp"
#include "tls_transport.hpp"

namespace loadlab::target {

namespace {

class TlsQuicTransport final : public TlsTransport {
 public:
  TlsQuicTransport(std::shared_ptr<boost::asio::ssl::context> tls, std::shared_ptr<const QuicTlsContext> quic)
      : TlsTransport(std::move(tls)), quic_(std::move(quic)) {}

  bool serves_h3() const override { return true; }

  std::unique_ptr<DatagramServer> make_h3_server(IoWorker& worker, const SessionEnv& env,
                                                 const H3Limits& limits) const override {
    return std::make_unique<H3Server>(worker, env, quic_, limits);
  }

 private:
  std::shared_ptr<const QuicTlsContext> quic_;
};

}  // namespace

std::shared_ptr<const SecureTransport> make_tls_quic_transport(std::shared_ptr<boost::asio::ssl::context> tls,
                                                               std::shared_ptr<const QuicTlsContext> quic) {
  return std::make_shared<TlsQuicTransport>(std::move(tls), std::move(quic));
}

}  // namespace loadlab::target
