#include "listener.hpp"

#include <boost/asio/error.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <chrono>

#include "secure_transport.hpp"
#include "session.hpp"

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

Listener::Listener(net::io_context& accept_ioc, std::vector<IoWorker*> workers, const SessionEnv& env)
    : accept_ioc_(accept_ioc),
      acceptor_(accept_ioc),
      backoff_(accept_ioc),
      workers_(std::move(workers)),
      env_(env) {}

beast::error_code Listener::listen(const tcp::endpoint& endpoint, bool reuse_port) {
  beast::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return ec;
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec && reuse_port) {
    acceptor_.set_option(net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true), ec);
  }
  if (ec) {
    beast::error_code ignored;
    acceptor_.close(ignored);
    return ec;
  }
  acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    acceptor_.close(ignored);
  }
  return ec;
}

tcp::endpoint Listener::local_endpoint() const {
  beast::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void Listener::run() { do_accept(); }

void Listener::close() {
  beast::error_code ec;
  acceptor_.close(ec);
  backoff_.cancel();
}

void Listener::do_accept() {
  if (!acceptor_.is_open()) return;
  net::io_context& target = workers_[next_worker_]->ioc;
  acceptor_.async_accept(target, beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
}

void Listener::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted) return;  // closed by shutdown
  if (ec == net::error::no_descriptors || ec == net::error::no_buffer_space || ec == net::error::no_memory) {
    // Out of descriptors: retrying at once would spin; give in-flight sessions time to close.
    fail(ec, "accept");
    backoff_.expires_after(std::chrono::milliseconds(50));
    backoff_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
      if (!wait_ec) self->do_accept();
    });
    return;
  }
  if (ec) {
    fail(ec, "accept");  // e.g. a connection aborted before we took it: keep accepting
  } else {
    IoWorker& worker = *workers_[next_worker_];
    next_worker_ = (next_worker_ + 1) % workers_.size();
    if (env_.secure) {
      env_.secure->start_session(std::move(socket), env_, worker);
    } else {
      std::make_shared<Session<PlainStream>>(std::move(socket), env_, worker)->run();
    }
  }
  do_accept();
}

void Listener::fail(beast::error_code ec, const char* what) { env_.log->warn("{}: {}", what, ec.message()); }

}  // namespace loadlab::target
