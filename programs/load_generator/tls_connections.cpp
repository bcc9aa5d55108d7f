// The load generator's TLS family (loadlab_load_secure): HTTP/1.1 and h2 over TLS, the same
// exchanges as over plain TCP instantiated on TlsTransport.
#include "connection_impl.hpp"
#include "h2_connection_impl.hpp"
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

}  // namespace

std::unique_ptr<SecureClients> make_tls_clients(const LoadOptions& options, const Url& url, RunPlan& plan,
                                                std::string& error) {
  auto tls = TlsClient::create(options, url, error);
  if (!tls) return nullptr;
  plan.tls = tls.get();
  return std::make_unique<TlsClients>(std::move(tls));
}

}  // namespace loadlab::load
