#pragma once
// A tiny HTTP/1.1 server for the load worker's tests, over TCP or TLS: 127.0.0.1:0, its own
// thread. Counts accepted connections, requests and (TLS) completed and resumed handshakes;
// answers after an optional delay: "/missing" gets 404, "/hints" an interim 103 Early Hints
// before its 200, anything else 200 "hello". Closes after the response when the request
// asked to ("Connection: close"), as most servers do: a TCP close, no TLS close_notify.
#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "self_signed_certificate.hpp"

namespace loadlab::load::testing {

struct TlsServerOptions {
  int min_version = TLS1_2_VERSION;
  int max_version = TLS1_3_VERSION;
};

class TestServer {
 public:
  // Plain HTTP.
  explicit TestServer(std::chrono::milliseconds delay = std::chrono::milliseconds(0)) : delay_(delay) {
    start();
  }
  // HTTPS with `cert`, the versions of `tls` allowed.
  TestServer(const SelfSignedCertificate& cert, TlsServerOptions tls = {},
             std::chrono::milliseconds delay = std::chrono::milliseconds(0))
      : delay_(delay), tls_(true) {
    context_.use_certificate_chain(boost::asio::buffer(cert.certificate_pem));
    context_.use_private_key(boost::asio::buffer(cert.key_pem), boost::asio::ssl::context::pem);
    SSL_CTX_set_min_proto_version(context_.native_handle(), tls.min_version);
    SSL_CTX_set_max_proto_version(context_.native_handle(), tls.max_version);
    start();
  }
  ~TestServer() {
    ioc_.stop();
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int64_t requests() const { return requests_.load(); }
  int64_t accepts() const { return accepts_.load(); }
  int64_t handshakes() const { return handshakes_.load(); }
  int64_t resumed() const { return resumed_.load(); }

 private:
  using tcp = boost::asio::ip::tcp;
  using TlsStream = boost::asio::ssl::stream<tcp::socket>;

  template <class Stream>
  class Session : public std::enable_shared_from_this<Session<Stream>> {
   public:
    template <class... Args>
    Session(TestServer& server, Args&&... args)
        : server_(server), stream_(std::forward<Args>(args)...), timer_(stream_.get_executor()) {}

    void start() {
      if constexpr (std::is_same_v<Stream, TlsStream>) {
        stream_.async_handshake(boost::asio::ssl::stream_base::server,
                                [self = this->shared_from_this()](boost::beast::error_code ec) {
                                  if (ec) return;
                                  self->server_.handshakes_.fetch_add(1);
                                  if (SSL_session_reused(self->stream_.native_handle()) == 1)
                                    self->server_.resumed_.fetch_add(1);
                                  self->do_read();
                                });
      } else {
        do_read();
      }
    }

   private:
    void do_read() {
      request_ = {};
      boost::beast::http::async_read(
          stream_, buffer_, request_,
          [self = this->shared_from_this()](boost::beast::error_code ec, std::size_t) {
            if (ec) return;
            self->server_.requests_.fetch_add(1);
            self->on_request();
          });
    }
    void on_request() {
      if (server_.delay_.count() == 0) return do_write();
      timer_.expires_after(server_.delay_);
      timer_.async_wait([self = this->shared_from_this()](boost::beast::error_code ec) {
        if (!ec) self->do_write();
      });
    }
    void do_write() {
      static const std::string kHints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
      if (request_.target() != "/hints") return write_response();
      boost::asio::async_write(stream_, boost::asio::buffer(kHints),
                               [self = this->shared_from_this()](boost::beast::error_code ec, std::size_t) {
                                 if (!ec) self->write_response();
                               });
    }
    void write_response() {
      namespace http = boost::beast::http;
      bool missing = request_.target() == "/missing";
      response_ = {missing ? http::status::not_found : http::status::ok, request_.version()};
      response_.body() = missing ? "missing" : "hello";
      response_.keep_alive(request_.keep_alive());
      response_.prepare_payload();
      http::async_write(stream_, response_,
                        [self = this->shared_from_this()](boost::beast::error_code ec, std::size_t) {
                          if (!ec && self->response_.keep_alive()) return self->do_read();
                          self->close();
                        });
    }
    void close() {
      // Marked shut down, so that OpenSSL keeps the session resumable without a close_notify.
      if constexpr (std::is_same_v<Stream, TlsStream>)
        SSL_set_shutdown(stream_.native_handle(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
      boost::beast::error_code ignored;
      boost::beast::get_lowest_layer(stream_).shutdown(tcp::socket::shutdown_send, ignored);
    }

    TestServer& server_;
    Stream stream_;
    boost::asio::steady_timer timer_;
    boost::beast::flat_buffer buffer_;
    boost::beast::http::request<boost::beast::http::string_body> request_;
    boost::beast::http::response<boost::beast::http::string_body> response_;
  };

  void start() {
    do_accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }

  void do_accept() {
    acceptor_.async_accept([this](boost::beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      accepts_.fetch_add(1);
      socket.set_option(tcp::no_delay(true));
      if (tls_)
        std::make_shared<Session<TlsStream>>(*this, std::move(socket), context_)->start();
      else
        std::make_shared<Session<tcp::socket>>(*this, std::move(socket))->start();
      do_accept();
    });
  }

  std::chrono::milliseconds delay_;
  bool tls_ = false;
  boost::asio::ssl::context context_{boost::asio::ssl::context::tls_server};  // outlives the sessions
  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_{ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::thread thread_;
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> accepts_{0};
  std::atomic<int64_t> handshakes_{0};
  std::atomic<int64_t> resumed_{0};
};

}  // namespace loadlab::load::testing
