#include "tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/buffer.hpp>

namespace loadlab::target {

namespace net = boost::asio;
namespace ssl = net::ssl;

namespace {

// kAlpnProtocols in the wire format: each name prefixed by its length.
const std::string& alpn_wire() {
  static const std::string wire = [] {
    std::string out;
    for (auto name : kAlpnProtocols) {
      out.push_back(static_cast<char>(name.size()));
      out.append(name);
    }
    return out;
  }();
  return wire;
}

// The first of our protocols the client offers. A client offering none of them gets a fatal
// no_application_protocol alert (RFC 7301 §3.2) rather than HTTP/1.1 it did not ask for.
int select_alpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                unsigned int in_len, void*) {
  const auto& ours = alpn_wire();
  unsigned char* selected = nullptr;
  const int rc =
      SSL_select_next_proto(&selected, out_len, reinterpret_cast<const unsigned char*>(ours.data()),
                            static_cast<unsigned>(ours.size()), in, in_len);
  if (rc != OPENSSL_NPN_NEGOTIATED) return SSL_TLSEXT_ERR_ALERT_FATAL;
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

std::string openssl_reason(const boost::system::error_code& ec) {
  auto text = ec.message();
  if (const char* queued = ERR_reason_error_string(ERR_get_error())) text += std::string(" (") + queued + ")";
  ERR_clear_error();
  return text;
}

TlsContextResult bad(TlsContextResult::Bad part, std::string error) {
  TlsContextResult result;
  result.bad = part;
  result.error = std::move(error);
  return result;
}

}  // namespace

TlsContextResult make_tls_context(const TlsCredentials& credentials) {
  using Bad = TlsContextResult::Bad;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(native, 0);  // the highest the library knows: TLS 1.3
  // Renegotiation is a client-triggered handshake on a live connection: nothing a benchmark
  // needs, and an easy way for one client to burn the server's CPU.
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
  // Resumption: tickets are on by default; a session id context is required to resume from the
  // session cache and harmless otherwise.
  static constexpr unsigned char kSessionContext[] = "loadlab-target";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
  SSL_CTX_set_alpn_select_cb(native, select_alpn, nullptr);

  // An encrypted key must fail here, not make OpenSSL ask for a passphrase on the terminal.
  context->set_password_callback([](std::size_t, ssl::context::password_purpose) { return std::string(); });
  boost::system::error_code ec;
  ERR_clear_error();
  context->use_certificate_chain(net::buffer(credentials.cert_pem), ec);
  if (ec) return bad(Bad::cert, "not a PEM certificate: " + openssl_reason(ec));
  context->use_private_key(net::buffer(credentials.key_pem), ssl::context::pem, ec);
  if (ec) return bad(Bad::key, "not an unencrypted PEM private key: " + openssl_reason(ec));
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return bad(Bad::key, "the key does not match the certificate");
  }
  TlsContextResult result;
  result.context = std::move(context);
  return result;
}

}  // namespace loadlab::target
