#pragma once
// loadlab_target_h3's SecureTransport: the TLS sessions of TlsTransport and HTTP/3 on the same
// port (H3Server: ngtcp2, nghttp3, GnuTLS).
#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "quic_tls.hpp"
#include "secure_transport.hpp"

namespace loadlab::target {

// `tls`: make_tls_context's; `quic`: QuicTlsContext::make's.
[[nodiscard]] std::shared_ptr<const SecureTransport> make_tls_quic_transport(
    std::shared_ptr<boost::asio::ssl::context> tls, std::shared_ptr<const QuicTlsContext> quic);

}  // namespace loadlab::target
