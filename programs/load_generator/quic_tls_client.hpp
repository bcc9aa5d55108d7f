#pragma once
// The TLS side of an HTTP/3 run (--protocol h3): QUIC's TLS 1.3 is GnuTLS's, through
// ngtcp2's GnuTLS crypto helper, since Debian 12's OpenSSL 3.0 has no QUIC API. One
// certificate-credentials object and one priority cache, built once before the worker
// threads start and shared by all of them (GnuTLS only reads them once set up), and a
// function that makes the GnuTLS session of one new QUIC connection. Internal to loadlab_load.
#include <gnutls/gnutls.h>

#include <memory>
#include <string>
#include <vector>

#include "loadlab/load/load_options.hpp"

namespace loadlab::load {

class QuicTlsClient {
 public:
  // The context for `options` (validated, https://, --protocol h3): verification against
  // --ca, the system store, or none (--insecure). Nullptr with `error` naming the flag when
  // the CA file holds no usable certificate.
  [[nodiscard]] static std::unique_ptr<QuicTlsClient> create(const LoadOptions& options, const Url& url,
                                                             std::string& error);
  ~QuicTlsClient();
  QuicTlsClient(const QuicTlsClient&) = delete;
  QuicTlsClient& operator=(const QuicTlsClient&) = delete;

  // Worker thread: a client session for one QUIC connection, configured for ngtcp2 (the
  // caller sets its conn_ref pointer), ALPN h3 only, SNI and verification of the URL's host,
  // early data enabled. `resume`: the session data of an earlier connection (a ticket), or
  // empty. Nullptr with `error` when GnuTLS refused.
  gnutls_session_t new_session(const std::vector<unsigned char>& resume, std::string& error) const;

  bool resume() const { return resume_; }
  bool zero_rtt() const { return zero_rtt_; }

  // Why a handshake failed, for people: the certificate verifier's verdict when it refused,
  // else GnuTLS's alert or error.
  static std::string failure(gnutls_session_t session, int tls_alert);

 private:
  QuicTlsClient() = default;

  gnutls_certificate_credentials_t credentials_ = nullptr;
  gnutls_priority_t priority_ = nullptr;
  std::string host_;
  bool host_is_ip_ = false;
  bool verify_ = true;
  bool resume_ = false;
  bool zero_rtt_ = false;
};

}  // namespace loadlab::load
