#pragma once
// An HTTPS client for the target's tests: Asio SSL over a Beast tcp_stream, every operation
// bounded. It verifies the server against `ca_pem` (the target's self-signed certificate) and
// the IP 127.0.0.1, can force one TLS version, offer an ALPN list and resume a session.
#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loadlab::target::testing {

struct TlsClientOptions {
  int version = 0;                            // TLS1_2_VERSION or TLS1_3_VERSION forces it; 0: either
  SSL_SESSION* resume = nullptr;              // a session of an earlier connection to offer
  std::vector<std::string> alpn{"http/1.1"};  // offered protocols; empty: no ALPN extension
};

class TlsClient {
 public:
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  static constexpr std::chrono::seconds kIoTimeout{5};

  TlsClient(uint16_t port, const std::string& ca_pem, const TlsClientOptions& options = {}) {
    namespace net = boost::asio;
    ctx_.add_certificate_authority(net::buffer(ca_pem), ec_);
    ctx_.set_verify_mode(net::ssl::verify_peer);
    if (options.version != 0) {
      SSL_CTX_set_min_proto_version(ctx_.native_handle(), options.version);
      SSL_CTX_set_max_proto_version(ctx_.native_handle(), options.version);
    }
    stream_ = std::make_unique<Stream>(ioc_, ctx_);
    SSL* ssl = stream_->native_handle();
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
    if (!options.alpn.empty()) {
      std::string wire;
      for (const auto& name : options.alpn) wire += static_cast<char>(name.size()) + name;
      SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned>(wire.size()));
    }
    if (options.resume) SSL_set_session(ssl, options.resume);
    if (ec_) return;
    lowest().expires_after(kIoTimeout);
    lowest().async_connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port),
                           [this](boost::beast::error_code ec) {
                             ec_ = ec;
                             if (ec) return;
                             stream_->async_handshake(net::ssl::stream_base::client,
                                                      [this](boost::beast::error_code ec) { ec_ = ec; });
                           });
    run();
    handshake_error_ = ec_;
  }

  // The connect or handshake failure, if any.
  boost::beast::error_code handshake_error() const { return handshake_error_; }
  boost::beast::error_code error() const { return ec_; }
  SSL* ssl() { return stream_->native_handle(); }
  bool resumed() { return SSL_session_reused(ssl()) == 1; }
  int version() { return SSL_version(ssl()); }
  std::string alpn() {
    const unsigned char* data = nullptr;
    unsigned size = 0;
    SSL_get0_alpn_selected(ssl(), &data, &size);
    return std::string(reinterpret_cast<const char*>(data), size);
  }
  // The session to resume in a later connection (owned by the caller: SSL_SESSION_free).
  SSL_SESSION* session() { return SSL_get1_session(ssl()); }

  boost::beast::error_code send_raw(std::string_view bytes) {
    lowest().expires_after(kIoTimeout);
    boost::asio::async_write(*stream_, boost::asio::buffer(bytes.data(), bytes.size()),
                             [this](boost::beast::error_code ec, std::size_t) { ec_ = ec; });
    run();
    return ec_;
  }

  // One request with extra header fields, and its response.
  Response request(const std::vector<std::pair<std::string, std::string>>& fields = {},
                   boost::beast::http::verb verb = boost::beast::http::verb::get, std::string target = "/",
                   bool keep_alive = true) {
    namespace http = boost::beast::http;
    http::request<http::empty_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(keep_alive);
    for (const auto& [name, value] : fields) req.set(name, value);
    lowest().expires_after(kIoTimeout);
    http::async_write(*stream_, req, [this](boost::beast::error_code ec, std::size_t) { ec_ = ec; });
    run();
    Response res;
    if (!ec_) read(res, verb == http::verb::head);
    return res;
  }

  // Reads one response; `head` tells the parser not to expect a body.
  boost::beast::error_code read(Response& out, bool head = false) {
    namespace http = boost::beast::http;
    http::response_parser<http::string_body> parser;
    parser.skip(head);
    parser.body_limit(128 * 1024 * 1024);
    lowest().expires_after(kIoTimeout);
    http::async_read(*stream_, buffer_, parser,
                     [this](boost::beast::error_code ec, std::size_t) { ec_ = ec; });
    run();
    if (!ec_) out = parser.release();
    return ec_;
  }

  // How the server ended the connection: the next read's error within `wait` (eof after its
  // close_notify), or success when it sent more bytes or nothing.
  boost::beast::error_code next_read_error(std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) {
    if (buffer_.size() != 0) return {};
    char byte;
    lowest().expires_after(wait);
    stream_->async_read_some(boost::asio::buffer(&byte, 1),
                             [this](boost::beast::error_code ec, std::size_t) { ec_ = ec; });
    run();
    return ec_;
  }

  // Sends our close_notify and waits (bounded) for the server's: a clean close, after which
  // a TLS 1.2 session stays resumable.
  boost::beast::error_code shutdown() {
    lowest().expires_after(kIoTimeout);
    stream_->async_shutdown([this](boost::beast::error_code ec) { ec_ = ec; });
    run();
    return ec_;
  }

 private:
  using Stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

  boost::beast::tcp_stream& lowest() { return boost::beast::get_lowest_layer(*stream_); }
  void run() {
    ioc_.restart();
    ioc_.run();
  }

  boost::asio::io_context ioc_{1};
  boost::asio::ssl::context ctx_{boost::asio::ssl::context::tls_client};
  std::unique_ptr<Stream> stream_;
  boost::beast::flat_buffer buffer_;
  boost::beast::error_code ec_;
  boost::beast::error_code handshake_error_;
};

}  // namespace loadlab::target::testing
