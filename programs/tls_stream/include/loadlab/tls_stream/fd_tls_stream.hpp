#pragma once
// A TLS stream over a TCP socket's own descriptor: OpenSSL reads and writes the socket itself
// (its socket BIO, non-blocking) and the socket's async_wait says when to try again. It has what
// Asio asks of an AsyncReadStream and AsyncWriteStream (net::async_write and Beast's read loops
// drive it), the handshake and the shutdown, in place of asio::ssl::stream (and Beast's
// ssl_stream over it), which keeps two 17 KB buffers of its own and a 17 KB BIO pair per
// connection. Here the bytes go straight between the socket and OpenSSL's record buffers, which
// SSL_MODE_RELEASE_BUFFERS frees while a connection is idle: an idle keep-alive TLS connection
// costs its SSL object and little else (issue 26).
//
// Several buffers written at once go out as one TLS record (up to kCoalesceBytes), as Beast's
// ssl_stream does: a response's head and body are one record, not two. An operation that
// completes at once has its handler posted, never called from inside the initiating function, as
// Asio requires. One read and one write may be pending at once, as on any Asio stream, from one
// thread (the socket's). `Socket`: a TCP socket type, or a reference to one (the load
// generator's connections keep their socket across TLS sessions).
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace loadlab::tls_stream {

// The error of an OpenSSL call on a stream that returned `ret` with SSL_get_error's `ssl_error`:
// asio::error::eof for the peer's close_notify, asio::ssl::error::stream_truncated for a TCP
// close without one, else OpenSSL's reason (in Asio's SSL category, as asio::ssl::stream says
// it) or the system's. Clears the thread's OpenSSL error queue.
boost::system::error_code tls_error(int ssl_error, int ret);

// Bytes of several buffers written at once that are copied into one TLS record.
inline constexpr std::size_t kCoalesceBytes = 16 * 1024;

template <class Socket>
class FdTlsStream {
 public:
  using next_layer_type = std::remove_reference_t<Socket>;
  using lowest_layer_type = typename next_layer_type::lowest_layer_type;
  using executor_type = typename next_layer_type::executor_type;
  using handshake_type = boost::asio::ssl::stream_base::handshake_type;

  // A new TLS session of `context` over `socket` (connected, or connected before the
  // handshake). native_handle() is null when OpenSSL could not make one (out of memory): the
  // handshake then fails.
  template <class Arg>
  FdTlsStream(Arg&& socket, SSL_CTX* context) : socket_(std::forward<Arg>(socket)), ssl_(SSL_new(context)) {
    if (!ssl_) return;
    SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                 SSL_MODE_RELEASE_BUFFERS);
    // One read(2) takes what the socket has (several records, or a record's header and body)
    // instead of a header and then its body. Every read asks OpenSSL first, so what it holds is
    // never left waiting for the socket.
    SSL_set_read_ahead(ssl_.get(), 1);
  }
  FdTlsStream(FdTlsStream&&) noexcept = default;  // with no operation pending
  FdTlsStream& operator=(FdTlsStream&&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  next_layer_type& next_layer() { return socket_; }
  lowest_layer_type& lowest_layer() { return socket_.lowest_layer(); }
  SSL* native_handle() { return ssl_.get(); }

  template <class Token>
  auto async_handshake(handshake_type type, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this, type](auto handler) {
          if (!prepare()) return finish<false>(std::move(handler), boost::asio::error::no_memory, 0, false);
          if (type == boost::asio::ssl::stream_base::client)
            SSL_set_connect_state(ssl_.get());
          else
            SSL_set_accept_state(ssl_.get());
          drive<false>([this](std::size_t&) { return SSL_do_handshake(ssl_.get()); }, std::move(handler),
                       false);
        },
        token);
  }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    auto into = first_buffer<boost::asio::mutable_buffer>(buffers);
    return transfer(std::forward<Token>(token), into.size(), [this, into](std::size_t& n) {
      return SSL_read_ex(ssl_.get(), into.data(), into.size(), &n);
    });
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    auto from = write_buffer(buffers);
    return transfer(std::forward<Token>(token), from.size(), [this, from](std::size_t& n) {
      return SSL_write_ex(ssl_.get(), from.data(), from.size(), &n);
    });
  }

  // Sends our close_notify (not waiting for the peer's when SSL_RECEIVED_SHUTDOWN is set, as the
  // callers do), then calls the handler.
  template <class Token>
  auto async_shutdown(Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto handler) {
          drive<false>(
              [this](std::size_t&) {
                const int ret = SSL_shutdown(ssl_.get());
                return ret == 0 ? 1 : ret;  // 0: ours sent, the peer's not read: done here
              },
              std::move(handler), false);
        },
        token);
  }

 private:
  struct SslFree {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
  };

  // A read or write of `size` bytes by `step` (SSL_read_ex or SSL_write_ex); none completes at
  // once, as on a socket.
  template <class Token, class Step>
  auto transfer(Token&& token, std::size_t size, Step step) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this, size](auto handler, Step step) {
          if (size == 0) return finish<true>(std::move(handler), {}, 0, false);
          drive<true>(std::move(step), std::move(handler), false);
        },
        token, std::move(step));
  }

  // The socket, connected by now, is the session's: non-blocking, its descriptor OpenSSL's.
  bool prepare() {
    if (!ssl_ || SSL_set_fd(ssl_.get(), static_cast<int>(socket_.native_handle())) != 1) return false;
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    return !ec;
  }

  // The first non-empty buffer of a sequence (a read fills one buffer at a time).
  template <class Buffer, class Buffers>
  static Buffer first_buffer(const Buffers& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it)
      if (Buffer b(*it); b.size() > 0) return b;
    return Buffer();
  }

  // What one write sends: the first buffer, or the first kCoalesceBytes of several copied into
  // one (kept until the write completes: OpenSSL retries from the same bytes).
  template <class Buffers>
  boost::asio::const_buffer write_buffer(const Buffers& buffers) {
    const auto begin = boost::asio::buffer_sequence_begin(buffers),
               end = boost::asio::buffer_sequence_end(buffers);
    std::size_t parts = 0;
    for (auto it = begin; it != end && parts < 2; ++it) parts += boost::asio::const_buffer(*it).size() > 0;
    if (parts < 2) return first_buffer<boost::asio::const_buffer>(buffers);
    flat_.resize(std::min(boost::asio::buffer_size(buffers), kCoalesceBytes));
    const std::size_t n = boost::asio::buffer_copy(boost::asio::buffer(flat_), buffers);
    return boost::asio::buffer(flat_.data(), n);
  }

  // Runs `step` (an OpenSSL call: its return value, and the bytes it moved in `n`) until it
  // succeeds or fails, waiting for the socket whenever OpenSSL asks to, then completes `handler`.
  // `waited`: this runs in a completion handler already. `kBytes`: the handler takes (ec, bytes),
  // else (ec).
  template <bool kBytes, class Step, class Handler>
  void drive(Step step, Handler handler, bool waited) {
    ERR_clear_error();  // SSL_get_error reads the thread's queue: other sessions' errors are not ours
    std::size_t n = 0;
    const int ret = step(n);
    if (ret > 0) return finish<kBytes>(std::move(handler), {}, n, waited);
    const int error = SSL_get_error(ssl_.get(), ret);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)
      return finish<kBytes>(std::move(handler), tls_error(error, ret), 0, waited);
    socket_.async_wait(error == SSL_ERROR_WANT_READ ? boost::asio::socket_base::wait_read
                                                    : boost::asio::socket_base::wait_write,
                       [this, step = std::move(step),
                        handler = std::move(handler)](const boost::system::error_code& ec) mutable {
                         if (ec) return finish<kBytes>(std::move(handler), ec, 0, true);
                         drive<kBytes>(std::move(step), std::move(handler), true);
                       });
  }

  // Completes `handler` with (ec, n) or (ec); posted unless `waited`.
  template <bool kBytes, class Handler>
  void finish(Handler handler, boost::system::error_code ec, std::size_t n, bool waited) {
    auto call = [handler = std::move(handler), ec, n]() mutable {
      if constexpr (kBytes)
        handler(ec, n);
      else
        handler(ec);
    };
    if (waited) return call();
    boost::asio::post(socket_.get_executor(), std::move(call));
  }

  Socket socket_;
  std::unique_ptr<SSL, SslFree> ssl_;
  std::vector<char> flat_;  // several buffers of the write in flight, as one
};

}  // namespace loadlab::tls_stream
