#pragma once
// The byte stream under one client connection: plain TCP, or TLS over that TCP socket
// (Asio's OpenSSL stream, as Beast's ssl_stream wraps it). The HTTP exchange above it
// (connection.hpp) reads and writes through it without knowing which: the choice is one
// well-predicted branch per I/O operation, never a virtual call per operation or byte. An
// HTTP/2 session (h2_connection.hpp) sits on the same transport; over TLS, ALPN confirms it.
// Lives on its worker's thread; every method runs there. Internal to loadlab_load.
#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tls_client.hpp"

namespace loadlab::load {

class Transport {
 public:
  // The io_context's own executor type, not the polymorphic any_executor: no type erasure
  // on each operation.
  using Socket =
      boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

  // `tls`: the run's TLS context for https://, nullptr for http://.
  Transport(boost::asio::io_context& ioc, TlsClient* tls) : socket_(ioc.get_executor()), tls_(tls) {}

  Socket& socket() { return socket_; }
  bool secure() const { return tls_ != nullptr; }

  // A fresh TLS session for the newly connected socket. The previous one's SSL object goes
  // (quietly: a session dropped without a close_notify would be marked not resumable);
  // with --tls-resume the new one offers the previous connection's session. False when
  // OpenSSL refused SNI or the host to verify.
  bool new_session() {
    if (stream_) SSL_set_shutdown(stream_->native_handle(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    stream_.emplace(socket_, tls_->context());
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
    if (stream_)
      stream_->async_read_some(buffers, std::forward<Handler>(handler));
    else
      socket_.async_read_some(buffers, std::forward<Handler>(handler));
  }

  template <class Handler>
  void async_write(boost::asio::const_buffer buffer, Handler&& handler) {
    if (stream_)
      boost::asio::async_write(*stream_, buffer, std::forward<Handler>(handler));
    else
      boost::asio::async_write(socket_, buffer, std::forward<Handler>(handler));
  }

  // Sends a TLS close_notify without waiting for the peer's, then calls `handler(ec)`: a
  // server drops a session whose connection ended without one from its cache, so a client
  // that closes first and means to resume says goodbye. The pending read, if any, then ends
  // with an error. Not with a write in flight.
  template <class Handler>
  void async_close_notify(Handler&& handler) {
    SSL_set_shutdown(stream_->native_handle(), SSL_RECEIVED_SHUTDOWN);  // SSL_shutdown: send, do not wait
    stream_->async_shutdown(std::forward<Handler>(handler));
  }

  // Whether the last handshake resumed an earlier session.
  bool resumed() { return stream_ && SSL_session_reused(stream_->native_handle()) == 1; }

  // --tls-resume, after a response: keeps the connection's newest session for the next
  // connect. TLS 1.3 tickets come after the handshake, so the session is taken once a
  // response was read (by then the tickets sent before it have been processed).
  void keep_session() {
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

  Socket socket_;
  TlsClient* tls_;
  std::optional<boost::asio::ssl::stream<Socket&>> stream_;
  std::unique_ptr<SSL_SESSION, SessionFree> session_;
};

}  // namespace loadlab::load
