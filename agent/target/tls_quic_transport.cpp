#include "tls_quic_transport.hpp"

#include "h3_server.hpp"
#include "loadlab/tls_stream/fd_tls_stream.hpp"
#include "session.hpp"

namespace loadlab::target {

extern template class Session<TlsStream>;  // tls_sessions.cpp

namespace {

class TlsQuicTransport final : public SecureTransport {
 public:
  TlsQuicTransport(std::shared_ptr<boost::asio::ssl::context> tls, std::shared_ptr<const QuicTlsContext> quic)
      : tls_(std::move(tls)), quic_(std::move(quic)) {}

  boost::asio::ssl::context& tls_context() const override { return *tls_; }

  void start_session(boost::asio::ip::tcp::socket socket, const SessionEnv& env,
                     IoWorker& worker) const override {
    std::make_shared<Session<TlsStream>>(std::move(socket), env, worker)->run();
  }

  bool serves_h3() const override { return quic_ != nullptr; }

  std::unique_ptr<DatagramServer> make_h3_server(IoWorker& worker, const SessionEnv& env,
                                                 const H3Limits& limits) const override {
    if (!quic_) return nullptr;
    return std::make_unique<H3Server>(worker, env, quic_, limits);
  }

 private:
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::shared_ptr<const QuicTlsContext> quic_;
};

}  // namespace

std::shared_ptr<const SecureTransport> make_secure_transport(std::shared_ptr<boost::asio::ssl::context> tls,
                                                             std::shared_ptr<const QuicTlsContext> quic) {
  return std::make_shared<TlsQuicTransport>(std::move(tls), std::move(quic));
}

}  // namespace loadlab::target
