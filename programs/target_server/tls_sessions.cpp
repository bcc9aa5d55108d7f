// Session and H2Session over TLS (HTTPS, with h2 or http/1.1 by ALPN): the part of the TCP
// sessions that needs OpenSSL, in loadlab_target_secure. The TLS-only members are defined here,
// before the instantiations that call them.
#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <string_view>

#include "h2_session_impl.hpp"
#include "loadlab/tls_stream/fd_tls_stream.hpp"
#include "session_impl.hpp"
#include "tls_context.hpp"

namespace loadlab::target {

namespace {

// Mark the peer's close_notify as received: SSL_shutdown then completes once ours is written,
// without waiting for the client's (many clients never send one).
void skip_peer_close_notify(SSL* ssl) {
  SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_RECEIVED_SHUTDOWN);
}

}  // namespace

template <>
TlsStream Session<TlsStream>::make_tls_stream(tcp::socket&& socket, const SessionEnv& env) {
  return TlsStream(std::move(socket), env.tls->native_handle());
}

template <>
void Session<TlsStream>::start_handshake() {
  stream_.async_handshake(net::ssl::stream_base::server,
                          beast::bind_front_handler(&Session<TlsStream>::on_handshake, shared_from_this()));
}

template <>
bool Session<TlsStream>::note_handshake() {
  worker_.tls_handshakes.fetch_add(1, std::memory_order_relaxed);
  if (SSL_session_reused(stream_.native_handle()) == 1)
    worker_.tls_resumed.fetch_add(1, std::memory_order_relaxed);
  const unsigned char* alpn = nullptr;
  unsigned alpn_size = 0;
  SSL_get0_alpn_selected(stream_.native_handle(), &alpn, &alpn_size);
  return std::string_view(reinterpret_cast<const char*>(alpn), alpn_size) == kAlpnH2;
}

template <>
void Session<TlsStream>::start_tls_shutdown() {
  skip_peer_close_notify(stream_.native_handle());
  set_deadline(Clock::now() + env_.write_timeout);
  stream_.async_shutdown(beast::bind_front_handler(&Session<TlsStream>::on_tls_shutdown, shared_from_this()));
}

template <>
void H2Session<TlsStream>::close_tls() {
  tls_shutdown_ = true;
  skip_peer_close_notify(stream_.native_handle());
  stream_.async_shutdown([self = shared_from_this()](beast::error_code ec) {
    if (self->closed_) return;
    if (ec) return self->close_now();
    self->close_tcp();
  });
}

template class Session<TlsStream>;
template class H2Session<TlsStream>;

}  // namespace loadlab::target
