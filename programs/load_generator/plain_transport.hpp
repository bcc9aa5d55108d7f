#pragma once
// The byte stream under one plain (http://) client connection: the TCP socket itself. The HTTP
// exchanges above it (Connection, H2Connection) are templates on their transport, so that the
// TLS one (tls_transport.hpp, in loadlab_load_secure) costs the plain family nothing: no branch
// per I/O operation, no OpenSSL header or library (a plain worker maps none; issue 26). A
// transport says whether it is secure (kSecure); only a secure one has the TLS steps, which the
// exchanges call under `if constexpr (Transport::kSecure)`. Lives on its worker's thread; every
// method runs there. Internal to loadlab_load.
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <utility>

#include "run_plan.hpp"

namespace loadlab::load {

// The io_context's own executor type, not the polymorphic any_executor: no type erasure on
// each operation.
using TcpSocket =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

class PlainTransport {
 public:
  static constexpr bool kSecure = false;

  PlainTransport(boost::asio::io_context& ioc, const RunPlan&) : socket_(ioc.get_executor()) {}

  TcpSocket& socket() { return socket_; }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    socket_.async_read_some(buffers, std::forward<Handler>(handler));
  }

  template <class Handler>
  void async_write(boost::asio::const_buffer buffer, Handler&& handler) {
    boost::asio::async_write(socket_, buffer, std::forward<Handler>(handler));
  }

  // Writes `buffer` at once, without the reactor: a request is small and, in a closed loop,
  // the socket's send buffer empty, so the write needs no wait, and the completion no trip
  // through the io_context's queue (callgrind: a fifth of the worker's instructions per
  // request). Returns how much went; `ec` would_block when the socket took nothing now.
  std::size_t write_now(boost::asio::const_buffer buffer, boost::system::error_code& ec) {
    if (!socket_.non_blocking()) socket_.non_blocking(true, ec);  // a new socket each connect
    return ec ? 0 : socket_.write_some(buffer, ec);
  }

  // The peer ended the stream (a FIN).
  static bool ended(const boost::system::error_code& ec) { return ec == boost::asio::error::eof; }

  // Closes the socket: a pending operation completes with an error.
  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  TcpSocket socket_;
};

}  // namespace loadlab::load
