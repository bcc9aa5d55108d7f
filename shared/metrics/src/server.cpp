#include "loadlab/metrics/server.hpp"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <thread>
#include <type_traits>

#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::metrics {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

namespace {
std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }
}  // namespace

bool check_listen(const std::string& listen, const ServerTls& tls, bool token, bool insecure,
                  const std::string& flag, const std::string& tls_flags) {
  if (!parse_endpoint(listen)) throw InputError(flag, "must be HOST:PORT, got \"" + listen + "\"");
  if (is_loopback_address(listen)) return false;
  const bool proven = tls.enabled() && (!tls.client_ca.empty() || token);
  if (!proven && !insecure)
    throw InputError(flag, listen +
                               " can be reached from the network: serve it over TLS whose callers prove "
                               "themselves (" +
                               tls_flags + "), or give --insecure to serve anyone who can reach it");
  return !proven;
}

struct Server::Impl {
  Collect collect;
  Authorize authorize;
  std::function<void()> on_refused;
  std::atomic<int> connections{0};
  std::optional<net::ssl::context> ssl;
  net::io_context io{1};  // after what its handlers' sessions use: they go first
  tcp::acceptor acceptor{io};
  std::thread thread;

  void accept();
  http::response<http::string_body> answer(const http::request<http::empty_body>& req);
};

namespace {

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Server::Impl& impl, Stream stream) : impl_(impl), stream_(std::move(stream)) {
    ++impl_.connections;
  }
  ~Session() { --impl_.connections; }

  void start() {
    expire();
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      stream_.async_handshake(net::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (!ec) self->read();
                              });
    } else {
      read();
    }
  }

 private:
  void expire() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(limits::kMetricsIdleTimeoutS));
  }

  void read() {
    parser_.emplace();
    parser_->header_limit(limits::kMetricsMaxHeaderBytes);
    parser_->body_limit(0);
    expire();
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted)
      return close();
    if (ec) {
      // Not a request this endpoint serves (a body, a header too long, not HTTP): said, then closed.
      res_ = {http::status::bad_request, 11};
      res_.set(http::field::content_type, "text/plain; charset=utf-8");
      res_.body() = "bad request: " + ec.message() + "\n";
      res_.keep_alive(false);
    } else {
      res_ = impl_.answer(parser_->get());
    }
    res_.prepare_payload();
    if (ec == beast::error_code{} && parser_->get().method() == http::verb::head) res_.body().clear();
    expire();
    http::async_write(stream_, res_, [self = this->shared_from_this()](beast::error_code wec, size_t) {
      if (wec || !self->res_.keep_alive()) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ignored;
    if constexpr (std::is_same_v<Stream, TlsStream>)
      beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    else
      stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  Server::Impl& impl_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> res_;
};

}  // namespace

http::response<http::string_body> Server::Impl::answer(const http::request<http::empty_body>& req) {
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.keep_alive(req.keep_alive());
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  const auto path = sv(req.target()).substr(0, sv(req.target()).find('?'));
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    res.result(http::status::method_not_allowed);
    res.set(http::field::allow, "GET, HEAD");
    res.body() = "method not allowed: GET /metrics\n";
  } else if (path != "/metrics") {
    res.result(http::status::not_found);
    res.body() = "not found: the metrics are at /metrics\n";
  } else if (authorize && !authorize(sv(req[http::field::authorization]))) {
    res.result(http::status::unauthorized);
    res.set(http::field::www_authenticate, "Bearer realm=\"loadlab\"");
    res.body() = "unauthorized: send Authorization: Bearer and the token\n";
    if (on_refused) on_refused();
  } else {
    try {
      const auto format = negotiate(sv(req[http::field::accept]));
      res.set(http::field::content_type, std::string(content_type(format)));
      res.body() = render(collect(), format);
    } catch (const std::exception& e) {
      res.result(http::status::internal_server_error);
      res.body() = std::string("the metrics could not be collected: ") + e.what() + "\n";
    }
  }
  return res;
}

void Server::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      if (connections.load() >= limits::kMetricsMaxConnections) {
        beast::error_code ignored;
        socket.close(ignored);
      } else if (ssl) {
        std::make_shared<Session<TlsStream>>(*this, TlsStream(beast::tcp_stream(std::move(socket)), *ssl))
            ->start();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(*this, beast::tcp_stream(std::move(socket)))->start();
      }
    }
    accept();
  });
}

Server::Server(Collect collect, Authorize authorize, std::function<void()> on_refused) : impl_(new Impl) {
  impl_->collect = std::move(collect);
  impl_->authorize = std::move(authorize);
  impl_->on_refused = std::move(on_refused);
}

Server::~Server() { stop(); }

std::string Server::start(const std::string& listen, const ServerTls& tls, const std::string& flag) {
  auto endpoint = parse_endpoint(listen);
  if (!endpoint) throw InputError(flag, "must be HOST:PORT, got \"" + listen + "\"");
  if (tls.enabled()) {
    auto& ctx = impl_->ssl.emplace(net::ssl::context::tls_server);
    ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                    net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                    net::ssl::context::no_tlsv1_1);
    auto use = [&](const std::string& what, const std::string& path, auto&& load) {
      beast::error_code ec;
      load(ec);
      if (ec) throw InputError(flag, "cannot use the " + what + " " + path + ": " + ec.message());
    };
    use("TLS certificate", tls.cert,
        [&](beast::error_code& ec) { ctx.use_certificate_chain_file(tls.cert, ec); });
    use("TLS key", tls.key,
        [&](beast::error_code& ec) { ctx.use_private_key_file(tls.key, net::ssl::context::pem, ec); });
    if (!tls.client_ca.empty()) {
      use("client CA", tls.client_ca,
          [&](beast::error_code& ec) { ctx.load_verify_file(tls.client_ca, ec); });
      ctx.set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert);
    }
  }
  beast::error_code ec;
  tcp::resolver resolver(impl_->io);
  auto results = resolver.resolve(endpoint->host, std::to_string(endpoint->port), ec);
  if (ec || results.empty())
    throw InputError(flag, "cannot resolve " + endpoint->host + ": " + (ec ? ec.message() : "no address"));
  const tcp::endpoint at = *results.begin();
  auto& acceptor = impl_->acceptor;
  if (acceptor.open(at.protocol(), ec); !ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(at, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw EnvironmentError(flag + " " + listen + ": cannot listen: " + ec.message());
  const auto bound = acceptor.local_endpoint();
  impl_->accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
  Endpoint e{bound.address().to_string(), bound.port()};
  return e.to_string();
}

void Server::stop() {
  if (!impl_->thread.joinable()) return;
  net::post(impl_->io, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->io.stop();
  });
  impl_->thread.join();
}

}  // namespace loadlab::metrics
