#pragma once
// The TLS side of HTTP/3: QUIC carries TLS 1.3 handshakes in its CRYPTO frames, and Debian 12's
// OpenSSL 3.0 has no QUIC API, so QUIC's TLS is GnuTLS driven by ngtcp2_crypto_gnutls. One
// context per server (the certificate and the session ticket key, made once so a ticket stays
// good for the process lifetime), one gnutls session per QUIC connection.
//
// Resumption is by session tickets, sent once the handshake completes; 0-RTT is accepted
// (GNUTLS_ENABLE_EARLY_DATA). GnuTLS accepts early data only with an anti-replay context, which
// checks the ticket's age against the client's (10 s window) and asks a database whether the
// ClientHello was seen within the window: AntiReplayStore, which remembers each one until it
// expires, so a replayed ClientHello's early data is refused (the request then waits for the
// handshake, as a full one does). The store is bounded: when it is full of entries not yet
// expired, early data is refused for new ClientHellos too, never accepted unchecked.
#include <gnutls/gnutls.h>

#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tls_context.hpp"

struct ngtcp2_crypto_conn_ref;

namespace loadlab::target {

inline constexpr std::string_view kAlpnH3 = "h3";

// The ClientHellos seen (GnuTLS's anti-replay database): add() is GnuTLS's "store" call.
// Thread-safe (one context serves every io thread).
class AntiReplayStore {
 public:
  explicit AntiReplayStore(std::size_t capacity = kCapacity) : capacity_(capacity) {}
  // 0 when `key` is new (and now remembered until `expires`), GNUTLS_E_DB_ENTRY_EXISTS when it
  // was seen and has not expired, or when the store is full of live entries.
  int add(time_t now, time_t expires, std::string_view key);
  std::size_t size() const;
  static constexpr std::size_t kCapacity = 65536;  // ~8 MB at most

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, time_t> seen_;  // key -> expiry
  std::size_t capacity_;
};

class QuicTlsContext {
 public:
  // Any thread, at start-up: nullptr (with `error` naming the part) if the PEM text is bad.
  [[nodiscard]] static std::shared_ptr<QuicTlsContext> make(const TlsCredentials& credentials,
                                                            std::string& error);
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
  std::unique_ptr<AntiReplayStore> replay_store_;
};

}  // namespace loadlab::target
