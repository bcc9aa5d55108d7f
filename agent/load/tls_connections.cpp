// The load generator's TLS and QUIC family (loadlab_load_secure): HTTP/1.1 and h2 over TLS, the
// same exchanges as over plain TCP instantiated on TlsTransport, and HTTP/3 over QUIC.
#include "connection_impl.hpp"
#include "h2_connection_impl.hpp"
#include "h3_connection.hpp"
#include "quic_tls_client.hpp"
#include "secure_clients.hpp"
#include "tls_client.hpp"
#include "tls_transport.hpp"

namespace loadlab::load {

template class Connection<TlsTransport>;
template class H2Connection<TlsTransport>;

namespace {

class TlsClients final : public SecureClients {
 public:
  explicit TlsClients(std::unique_ptr<TlsClient> tls) : tls_(std::move(tls)) {}
  std::unique_ptr<ClientConnection> make_connection(Worker& worker, int index) override {
    if (worker.plan().h2) return std::make_unique<H2Connection<TlsTransport>>(worker, index);
    return std::make_unique<Connection<TlsTransport>>(worker, index);
  }
  std::string_view tls_version() const override { return tls_->version(); }

 private:
  std::unique_ptr<TlsClient> tls_;
};

class QuicClients final : public SecureClients {
 public:
  explicit QuicClients(std::unique_ptr<QuicTlsClient> quic) : quic_(std::move(quic)) {}
  std::unique_ptr<ClientConnection> make_connection(Worker& worker, int index) override {
    return std::make_unique<H3Connection>(worker, index);
  }
  std::string_view tls_version() const override { return "1.3"; }  // QUIC runs over TLS 1.3 only

 private:
  std::unique_ptr<QuicTlsClient> quic_;
};

}  // namespace

std::unique_ptr<SecureClients> make_secure_clients(const LoadOptions& options, const Url& url, RunPlan& plan,
                                                   std::string& error) {
  if (uses_h3(options)) {
    auto quic = QuicTlsClient::create(options, url, error);
    if (!quic) return nullptr;
    plan.quic = quic.get();
    return std::make_unique<QuicClients>(std::move(quic));
  }
  auto tls = TlsClient::create(options, url, error);
  if (!tls) return nullptr;
  plan.tls = tls.get();
  return std::make_unique<TlsClients>(std::move(tls));
}

}  // namespace loadlab::load
