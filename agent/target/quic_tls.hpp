#pragma once
// The TLS side of HTTP/3: QUIC carries TLS 1.3 handshakes in its CRYPTO frames, and Debian 12's
// OpenSSL 3.0 has no QUIC API, so QUIC's TLS is GnuTLS driven by ngtcp2_crypto_gnutls. One
// context per server (the certificate and the session ticket key, made once so a ticket stays
// good for the process lifetime), one gnutls session per QUIC connection.
//
// Resumption is by session tickets, sent once the handshake completes; 0-RTT is accepted
// (GNUTLS_ENABLE_EARLY_DATA). GnuTLS accepts early data only with an anti-replay context, which
// checks the ticket's age against the client's (10 s window); its database of ClientHellos seen
// is a stub that records nothing, so a replayed 0-RTT request is answered again: harmless for
// a benchmark target, whose answers have no side effects (a real server would need the DB).
#include <gnutls/gnutls.h>

#include <memory>
#include <string>
#include <string_view>

#include "tls_context.hpp"

struct ngtcp2_crypto_conn_ref;

namespace loadlab::target {

inline constexpr std::string_view kAlpnH3 = "h3";

class QuicTlsContext {
 public:
  // Any thread, at start-up: nullptr (with `error` naming the part) if the PEM text is bad.
  static std::shared_ptr<QuicTlsContext> make(const TlsCredentials& credentials, std::string& error);
  ~QuicTlsContext();
  QuicTlsContext(const QuicTlsContext&) = delete;
  QuicTlsContext& operator=(const QuicTlsContext&) = delete;

  // A server session for one QUIC connection, configured for ngtcp2 (`conn_ref` is how its
  // callbacks find the connection; it must outlive the session). nullptr on failure.
  gnutls_session_t new_session(ngtcp2_crypto_conn_ref* conn_ref) const;

 private:
  QuicTlsContext() = default;

  gnutls_certificate_credentials_t credentials_ = nullptr;
  gnutls_datum_t ticket_key_{nullptr, 0};
  gnutls_anti_replay_t anti_replay_ = nullptr;
};

}  // namespace loadlab::target
