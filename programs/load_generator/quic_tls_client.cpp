#include "quic_tls_client.hpp"

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <boost/asio/ip/address.hpp>

#include "loadlab/shared/credential_files.hpp"

namespace loadlab::load {

namespace {

// TLS 1.3 only (QUIC knows no other), the AEADs QUIC defines, and no middlebox-compatibility
// mode (RFC 9001 §8.4 forbids it): ngtcp2's own examples use the same string.
constexpr const char* kPriority =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM:"
    "%DISABLE_TLS13_COMPAT_MODE";
constexpr unsigned char kAlpnH3[] = {'h', '3'};

}  // namespace

std::unique_ptr<QuicTlsClient> QuicTlsClient::create(const LoadOptions& o, const Url& url,
                                                     std::string& error) {
  std::unique_ptr<QuicTlsClient> tls(new QuicTlsClient());
  if (gnutls_certificate_allocate_credentials(&tls->credentials_) != 0 ||
      gnutls_priority_init(&tls->priority_, kPriority, nullptr) != 0) {
    error = "TLS: GnuTLS could not set up a QUIC client";
    return nullptr;
  }
  tls->verify_ = !o.insecure;
  if (tls->verify_) {
    if (!o.ca_file.empty()) {
      auto pem = read_credential_file(o.ca_file);
      gnutls_datum_t data{reinterpret_cast<unsigned char*>(pem ? pem->data() : nullptr),
                          pem ? static_cast<unsigned>(pem->size()) : 0u};
      if (!pem || gnutls_certificate_set_x509_trust_mem(tls->credentials_, &data, GNUTLS_X509_FMT_PEM) <= 0) {
        error = "--ca: no certificate could be read from " + o.ca_file;
        return nullptr;
      }
    } else if (gnutls_certificate_set_x509_system_trust(tls->credentials_) < 0) {
      error = "TLS: cannot load the system's certificate store";
      return nullptr;
    }
  }
  tls->resume_ = o.tls_resume;
  tls->zero_rtt_ = o.zero_rtt;
  tls->host_ = url.host;
  boost::system::error_code ec;
  boost::asio::ip::make_address(url.host, ec);
  tls->host_is_ip_ = !ec;
  return tls;
}

QuicTlsClient::~QuicTlsClient() {
  if (priority_) gnutls_priority_deinit(priority_);
  if (credentials_) gnutls_certificate_free_credentials(credentials_);
}

gnutls_session_t QuicTlsClient::new_session(const std::vector<unsigned char>& resume,
                                            std::string& error) const {
  gnutls_session_t session = nullptr;
  // GNUTLS_NO_END_OF_EARLY_DATA: QUIC has no EndOfEarlyData message (RFC 9001 §8.3).
  unsigned flags = GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA;
  if (zero_rtt_) flags |= GNUTLS_ENABLE_EARLY_DATA;
  if (!resume_) flags |= GNUTLS_NO_TICKETS;
  if (int rv = gnutls_init(&session, flags); rv != 0) {
    error = std::string("gnutls_init: ") + gnutls_strerror(rv);
    return nullptr;
  }
  auto fail = [&](const char* what, int rv) {
    error = std::string(what) + ": " + gnutls_strerror(rv);
    gnutls_deinit(session);
    return nullptr;
  };
  if (int rv = gnutls_priority_set(session, priority_); rv != 0) return fail("gnutls_priority_set", rv);
  if (ngtcp2_crypto_gnutls_configure_client_session(session) != 0)
    return fail("ngtcp2_crypto_gnutls_configure_client_session", GNUTLS_E_INTERNAL_ERROR);
  if (int rv = gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, credentials_); rv != 0)
    return fail("gnutls_credentials_set", rv);
  // Only h3: a server that cannot speak it fails the handshake.
  gnutls_datum_t alpn{const_cast<unsigned char*>(kAlpnH3), sizeof kAlpnH3};
  if (int rv = gnutls_alpn_set_protocols(session, &alpn, 1, GNUTLS_ALPN_MANDATORY); rv != 0)
    return fail("gnutls_alpn_set_protocols", rv);
  // SNI names a host, never an address (RFC 6066 §3).
  if (!host_is_ip_)
    if (int rv = gnutls_server_name_set(session, GNUTLS_NAME_DNS, host_.data(), host_.size()); rv != 0)
      return fail("gnutls_server_name_set", rv);
  // GnuTLS matches an address against the certificate's IP addresses, a name against its DNS names.
  if (verify_) gnutls_session_set_verify_cert(session, host_.c_str(), 0);
  if (!resume.empty())
    if (int rv = gnutls_session_set_data(session, resume.data(), resume.size()); rv != 0)
      return fail("gnutls_session_set_data", rv);
  return session;
}

std::string QuicTlsClient::failure(gnutls_session_t session, int tls_alert) {
  if (session) {
    if (unsigned status = gnutls_session_get_verify_cert_status(session); status != 0) {
      gnutls_datum_t text{};
      std::string reason = "certificate verify failed";
      if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
        reason += std::string(" (") + reinterpret_cast<const char*>(text.data) + ")";
        gnutls_free(text.data);
      }
      return reason;
    }
  }
  if (tls_alert != 0) {
    const char* name = gnutls_alert_get_name(static_cast<gnutls_alert_description_t>(tls_alert));
    return std::string("TLS alert: ") + (name ? name : std::to_string(tls_alert));
  }
  return "QUIC handshake failed";
}

}  // namespace loadlab::load
