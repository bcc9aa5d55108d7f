#pragma once
// loadlab_target_secure's SecureTransport: TLS sessions over OpenSSL (HTTPS; h2 or http/1.1 by
// ALPN) and, with a QUIC TLS context, HTTP/3 (H3Server: ngtcp2, nghttp3, GnuTLS).
#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "quic_tls.hpp"
#include "secure_transport.hpp"

namespace loadlab::target {

// `tls`: make_tls_context's; `quic`: QuicTlsContext::make's, or null for no HTTP/3.
[[nodiscard]] std::shared_ptr<const SecureTransport> make_secure_transport(
    std::shared_ptr<boost::asio::ssl::context> tls, std::shared_ptr<const QuicTlsContext> quic = nullptr);

}  // namespace loadlab::target
