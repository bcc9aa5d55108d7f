#include "loadlab/metrics/server.hpp"

#include <fcntl.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <list>
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

std::string insecure_warning(const std::string& flag, const std::string& listen, const ServerTls& tls,
                             bool token, const std::string& insecure_flag) {
  return insecure_flag + ": " + flag + " " + listen + " is reachable from the network " +
         (tls.enabled() ? "with TLS but no proof of its callers" : "without TLS") +
         "; anyone who can reach it can read the metrics" +
         (token && !tls.enabled() ? " if they have the token, which travels in clear text" : "");
}

// Admission. Anyone who reaches the port can open connections, so a cap that counts them all
// alike is held by whoever opens them first (connect and send nothing, or take a 401 and keep
// the connection), and a scraper with the token is shut out. So:
//  - A connection is unproven until one of its requests passes `authorize` and is answered
//    (with no token to check: until its first scrape). An unproven connection has
//    kMetricsFirstRequestTimeoutS to send each request (a scraper sends it at once), a 401
//    closes it, and at most kMetricsMaxUnprovenConnections are unproven: the other slots of
//    kMetricsMaxConnections are left for proven scrapers, which no one without the token becomes.
//  - A new connection is always accepted: a scraper must get its chance to prove itself. When it
//    takes the unproven connections or all of them past their cap, the oldest unproven one is
//    closed (it had the longest to prove itself); with none, the oldest proven one that waits
//    for its next request; with none of those either (every other one is answering), the new one.
// Someone opening connections without end can still close a scraper's new connection before its
// request arrives (it takes kMetricsMaxUnprovenConnections of theirs in that moment), but can hold
// no slot: the scraper's next try is served. A proven connection is closed for a newcomer only
// when every slot is proven (with a token, only its holders get there) and it is idle: it then
// connects again, as a scraper does after a closed keep-alive connection.
struct Server::Impl {
  // One connection, as admission sees it. Everything here runs on the server's one thread.
  struct Slot {
    virtual ~Slot() = default;
    virtual void close_now() = 0;  // unlists it and closes its socket (its operations end)
    bool proven = false;           // a request passed `authorize` and was answered
    bool waiting = true;           // waiting for a request (not answering one)
    bool listed = false;
    std::list<Slot*>::iterator at;
  };

  Collect collect;
  Authorize authorize;
  std::function<void()> on_refused;
  std::list<Slot*> slots;  // open connections, oldest first
  std::optional<net::ssl::context> ssl;
  net::io_context io{1};  // after what its handlers' sessions use: they go first
  tcp::acceptor acceptor{io};
  std::thread thread;

  void accept();
  // Lists a new connection and closes one (see above) when it takes a count past its cap.
  void admit(Slot& s);
  void release(Slot& s);
  // `authorized`: whether the request passed `authorize` (or there is none) and was served.
  http::response<http::string_body> answer(const http::request<http::empty_body>& req, bool& authorized);
};

void Server::Impl::admit(Slot& s) {
  s.at = slots.insert(slots.end(), &s);
  s.listed = true;
  const auto unproven = std::count_if(slots.begin(), slots.end(), [](Slot* c) { return !c->proven; });
  const bool too_many = slots.size() > static_cast<size_t>(limits::kMetricsMaxConnections);
  if (unproven <= limits::kMetricsMaxUnprovenConnections && !too_many) return;
  auto oldest = [&](auto&& which) -> Slot* {
    for (Slot* c : slots)
      if (c != &s && which(*c)) return c;
    return nullptr;
  };
  Slot* victim = oldest([](const Slot& c) { return !c.proven; });
  if (!victim) victim = oldest([](const Slot& c) { return c.waiting; });
  (victim ? victim : &s)->close_now();
}

void Server::Impl::release(Slot& s) {
  if (!s.listed) return;
  slots.erase(s.at);
  s.listed = false;
}

namespace {

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>>, public Server::Impl::Slot {
 public:
  Session(Server::Impl& impl, Stream stream) : impl_(impl), stream_(std::move(stream)) {}
  ~Session() override { impl_.release(*this); }

  // Admits the connection (which may close it, or an older one) and serves it.
  void start() {
    impl_.admit(*this);
    if (!listed) return;
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

  void close_now() override {
    impl_.release(*this);
    beast::get_lowest_layer(stream_).close();
  }

 private:
  // An unproven connection must send its request soon; a proven one may wait between scrapes.
  void expire() {
    beast::get_lowest_layer(stream_).expires_after(
        std::chrono::seconds(proven ? limits::kMetricsIdleTimeoutS : limits::kMetricsFirstRequestTimeoutS));
  }

  void read() {
    parser_.emplace();
    parser_->header_limit(limits::kMetricsMaxHeaderBytes);
    parser_->body_limit(0);
    waiting = true;
    expire();
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || !listed)
      return close();
    waiting = false;
    if (ec) {
      // Not a request this endpoint serves (a body, a header too long, not HTTP): said, then closed.
      res_ = {http::status::bad_request, 11};
      res_.set(http::field::content_type, "text/plain; charset=utf-8");
      res_.body() = "bad request: " + ec.message() + "\n";
      res_.keep_alive(false);
    } else {
      bool authorized = false;
      res_ = impl_.answer(parser_->get(), authorized);
      proven = proven || authorized;
    }
    res_.prepare_payload();
    if (ec == beast::error_code{} && parser_->get().method() == http::verb::head) res_.body().clear();
    expire();
    http::async_write(stream_, res_, [self = this->shared_from_this()](beast::error_code wec, size_t) {
      if (wec || !self->res_.keep_alive() || !self->listed) return self->close();
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

http::response<http::string_body> Server::Impl::answer(const http::request<http::empty_body>& req,
                                                       bool& authorized) {
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
    res.keep_alive(false);  // a refused caller keeps no slot (Admission, above)
    if (on_refused) on_refused();
  } else {
    authorized = true;
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

// Asio opens and accepts sockets without SOCK_CLOEXEC: a program the process starts (an agent's
// job) would inherit them, and could accept scrapes or hold the port after the agent stops.
namespace {
void close_on_exec(int fd) { fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC); }
}  // namespace

void Server::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      close_on_exec(socket.native_handle());
      if (ssl) {
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
  if (acceptor.open(at.protocol(), ec); !ec) {
    close_on_exec(acceptor.native_handle());
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  }
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
