#include "server.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include "loadlab/shared/logging.hpp"

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

namespace {

IoWorkers make_workers(unsigned threads) {
  IoWorkers workers;
  for (unsigned i = 0; i < std::max(threads, 1u); ++i) workers.push_back(std::make_unique<IoWorker>());
  return workers;
}

// Timers of an io thread fire within 1 ns of their time instead of the default 50 us slack:
// delays are what the target is measured by, and the cost is a few more wake-ups.
void tighten_timer_slack() { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

}  // namespace

Server::Server(ServerOptions options)
    : options_(std::move(options)),
      responses_(options_.body, options_.status),
      log_(component_logger("target")),
      stall_(options_.stall_after, options_.stall_duration),
      workers_(make_workers(options_.threads)),
      drain_timer_(workers_.front()->ioc) {
  env_.responses = &responses_;
  env_.delay = options_.delay;
  env_.work = options_.work;
  env_.stall = &stall_;
  env_.read_timeout = options_.read_timeout;
  env_.idle_timeout = options_.idle_timeout;
  env_.header_limit = options_.header_limit;
  env_.body_limit = options_.body_limit;
  env_.stopping = &stopping_;
  env_.in_flight = &in_flight_;
  env_.workers = &workers_;
  env_.log = log_.get();
  if (options_.secure) {
    env_.secure = options_.secure.get();
    env_.tls = &options_.secure->tls_context();
  }
  for (auto& worker : workers_) guards_.push_back(net::make_work_guard(worker->ioc));
  if (options_.secure && options_.secure->serves_h3())
    h3_ = options_.secure->make_h3_server(*workers_.front(), env_, options_.h3_limits);
  if (options_.acceptor == AcceptorMode::shared) {
    std::vector<IoWorker*> all;
    for (auto& worker : workers_) all.push_back(worker.get());
    listeners_.push_back(std::make_shared<Listener>(workers_.front()->ioc, std::move(all), env_));
  } else {
    for (auto& worker : workers_) {
      listeners_.push_back(
          std::make_shared<Listener>(worker->ioc, std::vector<IoWorker*>{worker.get()}, env_));
    }
  }
}

Server::~Server() {
  // run() has returned (or never ran): no thread touches the io_contexts any more. Drop the
  // listeners and timer before the contexts, whose destruction frees the sessions left.
  guards_.clear();
  listeners_.clear();
  h3_.reset();
}

beast::error_code Server::listen_on(const tcp::endpoint& endpoint) {
  const bool reuse_port = options_.acceptor == AcceptorMode::reuseport;
  auto ec = listeners_.front()->listen(endpoint, reuse_port);
  if (ec) return ec;
  // The other acceptors join the port the first one got (a kernel-chosen one when 0).
  const auto bound = listeners_.front()->local_endpoint();
  for (std::size_t i = 1; i < listeners_.size(); ++i) {
    ec = listeners_[i]->listen(bound, reuse_port);
    if (ec) return ec;
  }
  return ec;
}

beast::error_code Server::listen() {
  beast::error_code ec;
  auto address = net::ip::make_address(options_.listen.host, ec);
  if (!ec) {
    ec = listen_on(tcp::endpoint(address, options_.listen.port));
    return ec ? ec : listen_udp();
  }
  tcp::resolver resolver(workers_.front()->ioc);
  auto results = resolver.resolve(options_.listen.host, std::to_string(options_.listen.port), ec);
  if (ec) return ec;
  for (const auto& entry : results) {
    ec = listen_on(entry.endpoint());
    if (!ec) break;
  }
  return ec ? ec : listen_udp();
}

// HTTP/3 at the address and port TCP got (a kernel-chosen port when 0): a client told one port
// finds both.
beast::error_code Server::listen_udp() {
  if (!h3_) return {};
  const auto bound = listeners_.front()->local_endpoint();
  auto ec = h3_->listen(net::ip::udp::endpoint(bound.address(), bound.port()));
  if (!ec) log_->info("h3: HTTP/3 over QUIC on udp {}", local_endpoint().to_string());
  return ec;
}

Endpoint Server::local_endpoint() const {
  auto ep = listeners_.front()->local_endpoint();
  return Endpoint{ep.address().to_string(), ep.port()};
}

net::any_io_executor Server::control_executor() { return workers_.front()->ioc.get_executor(); }

void Server::run() {
  for (auto& listener : listeners_) {
    net::post(listener->accept_context(), [this, listener] {
      if (!stopping_.load()) listener->run();
    });
  }
  if (h3_) {
    net::post(workers_.front()->ioc, [this] {
      if (!stopping_.load()) h3_->run();
    });
  }
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < workers_.size(); ++i) {
    threads.emplace_back([&ioc = workers_[i]->ioc] {
      tighten_timer_slack();
      ioc.run();
    });
  }
  tighten_timer_slack();
  workers_.front()->ioc.run();
  for (auto& t : threads) t.join();
}

void Server::initiate_shutdown() {
  if (stopping_.exchange(true)) return;
  for (auto& listener : listeners_) net::post(listener->accept_context(), [listener] { listener->close(); });
  net::post(workers_.front()->ioc, [this] {
    drain_deadline_ = std::chrono::steady_clock::now() + options_.shutdown_grace;
    if (h3_) h3_->initiate_shutdown();
    on_drain_tick();
  });
}

void Server::on_drain_tick() {
  // HTTP/3 connections say CONNECTION_CLOSE once their streams are answered and acknowledged.
  const auto pending = in_flight_.load() + (h3_ ? h3_->live_connections() : 0);
  if (pending <= 0) return stop_io();
  if (std::chrono::steady_clock::now() >= drain_deadline_) {
    log_->warn("shutdown: {} responses still pending after the grace period", pending);
    return stop_io();
  }
  drain_timer_.expires_after(std::chrono::milliseconds(2));
  drain_timer_.async_wait([this](beast::error_code ec) {
    if (!ec) on_drain_tick();
  });
}

void Server::stop_io() {
  for (auto& worker : workers_) worker->ioc.stop();
}

std::uint64_t Server::requests() const { return count_requests(workers_); }

ServerStats Server::stats() const { return count_stats(workers_); }

}  // namespace loadlab::target
