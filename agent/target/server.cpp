#include "server.hpp"

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

std::vector<std::unique_ptr<IoWorker>> make_workers(unsigned threads) {
  std::vector<std::unique_ptr<IoWorker>> workers;
  for (unsigned i = 0; i < std::max(threads, 1u); ++i) workers.push_back(std::make_unique<IoWorker>());
  return workers;
}

}  // namespace

Server::Server(ServerOptions options)
    : options_(std::move(options)),
      responses_(options_.body),
      log_(component_logger("target")),
      workers_(make_workers(options_.threads)),
      drain_timer_(workers_.front()->ioc) {
  env_.responses = &responses_;
  env_.delay = options_.delay;
  env_.read_timeout = options_.read_timeout;
  env_.header_limit = options_.header_limit;
  env_.body_limit = options_.body_limit;
  env_.stopping = &stopping_;
  env_.in_flight = &in_flight_;
  env_.log = log_.get();
  for (auto& worker : workers_) guards_.push_back(net::make_work_guard(worker->ioc));
  listener_ = std::make_shared<Listener>(workers_.front()->ioc, workers_, env_);
}

Server::~Server() {
  // run() has returned (or never ran): no thread touches the io_contexts any more. Drop the
  // listener and timer before the contexts, whose destruction frees the sessions left.
  guards_.clear();
  listener_.reset();
}

beast::error_code Server::listen() {
  beast::error_code ec;
  auto address = net::ip::make_address(options_.listen.host, ec);
  if (!ec) return listener_->listen(tcp::endpoint(address, options_.listen.port));
  tcp::resolver resolver(workers_.front()->ioc);
  auto results = resolver.resolve(options_.listen.host, std::to_string(options_.listen.port), ec);
  if (ec) return ec;
  for (const auto& entry : results) {
    ec = listener_->listen(entry.endpoint());
    if (!ec) break;
  }
  return ec;
}

Endpoint Server::local_endpoint() const {
  auto ep = listener_->local_endpoint();
  return Endpoint{ep.address().to_string(), ep.port()};
}

net::any_io_executor Server::control_executor() { return workers_.front()->ioc.get_executor(); }

void Server::run() {
  net::post(workers_.front()->ioc, [this] {
    if (!stopping_.load()) listener_->run();
  });
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < workers_.size(); ++i) {
    threads.emplace_back([&ioc = workers_[i]->ioc] { ioc.run(); });
  }
  workers_.front()->ioc.run();
  for (auto& t : threads) t.join();
}

void Server::initiate_shutdown() {
  if (stopping_.exchange(true)) return;
  net::post(workers_.front()->ioc, [this] {
    listener_->close();
    drain_deadline_ = std::chrono::steady_clock::now() + options_.shutdown_grace;
    on_drain_tick();
  });
}

void Server::on_drain_tick() {
  const auto pending = in_flight_.load();
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

std::uint64_t Server::requests() const {
  std::uint64_t total = 0;
  for (const auto& worker : workers_) total += worker->responses_sent.load(std::memory_order_relaxed);
  return total;
}

}  // namespace loadlab::target
