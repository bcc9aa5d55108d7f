#include "quic_tls.hpp"

#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

namespace loadlab::target {

namespace {

// TLS 1.3 only, with the AEADs QUIC defines (RFC 9001 §5.3); no middlebox compatibility mode,
// which QUIC forbids (RFC 9001 §8.4).
constexpr const char* kPriority =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:"
    "+GROUP-SECP521R1";

// The anti-replay database's insert, GnuTLS's call into AntiReplayStore.
int remember(void* store, time_t expires, const gnutls_datum_t* key, const gnutls_datum_t*) {
  return static_cast<AntiReplayStore*>(store)->add(
      std::time(nullptr), expires, std::string_view(reinterpret_cast<const char*>(key->data), key->size));
}

gnutls_datum_t datum(const std::string& text) {
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(text.data())),
          static_cast<unsigned>(text.size())};
}

}  // namespace

std::shared_ptr<QuicTlsContext> QuicTlsContext::make(const TlsCredentials& credentials, std::string& error) {
  std::shared_ptr<QuicTlsContext> context(new QuicTlsContext());
  if (int rv = gnutls_certificate_allocate_credentials(&context->credentials_); rv != 0) {
    error = std::string("gnutls: ") + gnutls_strerror(rv);
    return nullptr;
  }
  const auto cert = datum(credentials.cert_pem);
  const auto key = datum(credentials.key_pem);
  if (int rv = gnutls_certificate_set_x509_key_mem2(context->credentials_, &cert, &key, GNUTLS_X509_FMT_PEM,
                                                    nullptr, 0);
      rv < 0) {
    error = std::string("the certificate or key is not usable by GnuTLS: ") + gnutls_strerror(rv);
    return nullptr;
  }
  if (int rv = gnutls_session_ticket_key_generate(&context->ticket_key_); rv != 0) {
    error = std::string("gnutls_session_ticket_key_generate: ") + gnutls_strerror(rv);
    return nullptr;
  }
  if (int rv = gnutls_anti_replay_init(&context->anti_replay_); rv != 0) {
    error = std::string("gnutls_anti_replay_init: ") + gnutls_strerror(rv);
    return nullptr;
  }
  context->replay_store_ = std::make_unique<AntiReplayStore>();
  gnutls_anti_replay_set_add_function(context->anti_replay_, remember);
  gnutls_anti_replay_set_ptr(context->anti_replay_, context->replay_store_.get());
  return context;
}

int AntiReplayStore::add(time_t now, time_t expires, std::string_view key) {
  std::lock_guard lock(mutex_);
  if (auto it = seen_.find(std::string(key)); it != seen_.end()) {
    if (it->second > now) return GNUTLS_E_DB_ENTRY_EXISTS;  // a replay within the window
    seen_.erase(it);
  }
  if (seen_.size() >= capacity_) {
    for (auto it = seen_.begin(); it != seen_.end();)
      it = it->second <= now ? seen_.erase(it) : std::next(it);
    if (seen_.size() >= capacity_) return GNUTLS_E_DB_ENTRY_EXISTS;  // full of live ones: refuse, not guess
  }
  seen_.emplace(std::string(key), expires);
  return 0;
}

std::size_t AntiReplayStore::size() const {
  std::lock_guard lock(mutex_);
  return seen_.size();
}

QuicTlsContext::~QuicTlsContext() {
  if (anti_replay_ != nullptr) gnutls_anti_replay_deinit(anti_replay_);
  if (ticket_key_.data != nullptr) gnutls_free(ticket_key_.data);
  if (credentials_ != nullptr) gnutls_certificate_free_credentials(credentials_);
}

gnutls_session_t QuicTlsContext::new_session(ngtcp2_crypto_conn_ref* conn_ref) const {
  gnutls_session_t session = nullptr;
  // QUIC has no EndOfEarlyData message (RFC 9001 §8.3); tickets are sent by hand once the
  // handshake is done (handshake_completed), as ngtcp2's example server does.
  if (gnutls_init(&session, GNUTLS_SERVER | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_AUTO_SEND_TICKET |
                                GNUTLS_NO_END_OF_EARLY_DATA) != 0)
    return nullptr;
  auto fail = [&session] {
    gnutls_deinit(session);
    return nullptr;
  };
  if (gnutls_priority_set_direct(session, kPriority, nullptr) != 0) return fail();
  if (gnutls_session_ticket_enable_server(session, &ticket_key_) != 0) return fail();
  if (ngtcp2_crypto_gnutls_configure_server_session(session) != 0) return fail();
  gnutls_anti_replay_enable(session, anti_replay_);
  // ngtcp2 requires the largest value: QUIC, not TLS, limits 0-RTT data (by flow control).
  gnutls_record_set_max_early_data_size(session, 0xffffffffu);
  gnutls_session_set_ptr(session, conn_ref);
  if (gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, credentials_) != 0) return fail();
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(kAlpnH3.data())),
                      static_cast<unsigned>(kAlpnH3.size())};
  // Mandatory: a client offering no h3 gets a no_application_protocol alert.
  if (gnutls_alpn_set_protocols(session, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0) return fail();
  return session;
}

}  // namespace loadlab::target
