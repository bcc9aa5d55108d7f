#pragma once
// The byte stream under one https:// client connection: TLS over its TCP socket's own descriptor
// (loadlab/tls_stream/fd_tls_stream.hpp: no buffers of its own beside OpenSSL's), with the TLS steps the
// exchanges above it take when their transport is secure (plain_transport.hpp says how): a new session per
// connect, the handshake, ALPN, resumption and the close_notify. Lives on its worker's thread; every method
// runs there. Internal to loadlab_load_secure.
#include <openssl/ssl.h>

#include <boost/asio/ssl/error.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "loadlab/tls_stream/fd_tls_stream.hpp"
#include "plain_transport.hpp"
#include "tls_client.hpp"

namespace loadlab::load {

class TlsTransport {
 public:
  static constexpr bool kSecure = true;

  // `plan.tls`: the run's TLS context.
  TlsTransport(boost::asio::io_context& ioc, const RunPlan& plan)
      : socket_(ioc.get_executor()), tls_(plan.tls) {}

  TcpSocket& socket() { return socket_; }

  // A fresh TLS session for the newly connected socket. The previous one's SSL object goes
  // (quietly: a session dropped without a close_notify would be marked not resumable);
  // with --tls-resume the new one offers the previous connection's session. False when
  // OpenSSL refused SNI or the host to verify.
  bool new_session() {
    if (stream_) SSL_set_shutdown(stream_->native_handle(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    stream_.emplace(socket_, tls_->context().native_handle());
    SSL* ssl = stream_->native_handle();
    if (session_) SSL_set_session(ssl, session_.get());
    return tls_->prepare(ssl);
  }

  template <class Handler>
  void async_handshake(Handler&& handler) {
    stream_->async_handshake(boost::asio::ssl::stream_base::client, std::forward<Handler>(handler));
  }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    stream_->async_read_some(buffers, std::forward<Handler>(handler));
  }

  template <class Handler>
  void async_write(boost::asio::const_buffer buffer, Handler&& handler) {
    boost::asio::async_write(*stream_, buffer, std::forward<Handler>(handler));
  }

  // The peer ended the stream: a TLS peer that closes without close_notify (most servers after
  // "Connection: close") ends it as a TCP peer does with a FIN.
  static bool ended(const boost::system::error_code& ec) {
    return ec == boost::asio::error::eof || ec == boost::asio::ssl::error::stream_truncated;
  }

  // --tls-resume: this side ends a connection on purpose with a close_notify
  // (async_close_notify), as servers forget a session whose connection ended without one.
  bool says_goodbye() const { return tls_->resume(); }

  // Sends a TLS close_notify without waiting for the peer's, then calls `handler(ec)`. The
  // pending read, if any, then ends with an error. Not with a write in flight.
  template <class Handler>
  void async_close_notify(Handler&& handler) {
    SSL_set_shutdown(stream_->native_handle(), SSL_RECEIVED_SHUTDOWN);  // SSL_shutdown: send, do not wait
    stream_->async_shutdown(std::forward<Handler>(handler));
  }

  // Whether the last handshake resumed an earlier session.
  bool resumed() { return stream_ && SSL_session_reused(stream_->native_handle()) == 1; }

  // After a response: with --tls-resume, keeps the connection's newest session for the next
  // connect. TLS 1.3 tickets come after the handshake, so the session is taken once a
  // response was read (by then the tickets sent before it have been processed).
  void response_read() {
    if (!tls_->resume()) return;
    SSL* ssl = stream_->native_handle();
    if (SSL_get0_session(ssl) != session_.get()) session_.reset(SSL_get1_session(ssl));
  }

  // The protocol the server selected in ALPN in the last handshake; empty if none.
  std::string_view alpn() { return stream_ ? TlsClient::selected_protocol(stream_->native_handle()) : ""; }

  // Why the handshake failed, for people.
  std::string failure(const boost::system::error_code& ec) {
    return TlsClient::failure(stream_ ? stream_->native_handle() : nullptr, ec);
  }

  // Closes the socket: a pending operation completes with an error. The SSL object stays
  // until the next session replaces it (its pending operation still refers to it).
  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  struct SessionFree {
    void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
  };

  TcpSocket socket_;
  TlsClient* tls_;
  std::optional<tls_stream::FdTlsStream<TcpSocket&>> stream_;
  std::unique_ptr<SSL_SESSION, SessionFree> session_;
};

}  // namespace loadlab::load
