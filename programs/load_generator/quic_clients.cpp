// The load generator's HTTP/3 family (loadlab_load_h3): H3Connection over QUIC (ngtcp2,
// nghttp3, GnuTLS).
#include "h3_connection.hpp"
#include "quic_tls_client.hpp"
#include "secure_clients.hpp"

namespace loadlab::load {

namespace {

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

std::unique_ptr<SecureClients> make_quic_clients(const LoadOptions& options, const Url& url, RunPlan& plan,
                                                 std::string& error) {
  auto quic = QuicTlsClient::create(options, url, error);
  if (!quic) return nullptr;
  plan.quic = quic.get();
  return std::make_unique<QuicClients>(std::move(quic));
}

}  // namespace loadlab::load
