#include "loadlab/tls_stream/fd_tls_stream.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <cerrno>

namespace loadlab::tls_stream {

boost::system::error_code tls_error(int ssl_error, int ret) {
  const unsigned long queued = ERR_peek_error();
  boost::system::error_code ec;
  if (ssl_error == SSL_ERROR_ZERO_RETURN) {
    ec = boost::asio::error::eof;  // the peer's close_notify
  } else if (ssl_error == SSL_ERROR_SYSCALL && queued == 0) {
    // The connection ended under OpenSSL: with no errno, a TCP close without close_notify.
    ec = ret == 0 || errno == 0 ? boost::system::error_code(boost::asio::ssl::error::stream_truncated)
                                : boost::system::error_code(errno, boost::system::system_category());
  } else if (ERR_GET_LIB(queued) == ERR_LIB_SSL &&
             ERR_GET_REASON(queued) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ec = boost::asio::ssl::error::stream_truncated;  // OpenSSL 3's way of saying the same
  } else {
    ec = boost::system::error_code(static_cast<int>(queued), boost::asio::error::get_ssl_category());
  }
  ERR_clear_error();
  return ec;
}

}  // namespace loadlab::tls_stream
