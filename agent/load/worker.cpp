#include "worker.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "connection.hpp"

namespace loadlab::load {

namespace asio = boost::asio;

Worker::Worker(const RunPlan& plan, RunState& state, int connections, std::optional<int64_t> budget)
    : plan_(plan), state_(state), sweep_timer_(ioc_), end_timer_(ioc_), budget_(budget) {
  // Timeouts are enforced by a sweep; its period bounds how late a timeout fires.
  sweep_interval_ = std::clamp<Clock::duration>(plan.timeout / 10, std::chrono::milliseconds(1),
                                                std::chrono::milliseconds(100));
  connections_.reserve(connections);
  for (int i = 0; i < connections; ++i) connections_.push_back(std::make_unique<Connection>(*this));
}

Worker::~Worker() = default;

void Worker::run() {
  active_ = static_cast<int>(connections_.size());
  if (active_ == 0) return;
  if (plan_.measure_end) {
    end_timer_.expires_at(*plan_.measure_end);
    end_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) stop_now();
    });
  }
  schedule_sweep();
  for (auto& c : connections_) c->start();
  ioc_.run();
  publish();
}

void Worker::post_stop() {
  asio::post(ioc_, [this] { stop_now(); });
}

void Worker::stop_now() {
  if (stopping_) return;
  stopping_ = true;
  for (auto& c : connections_) c->stop();
}

void Worker::schedule_sweep() {
  sweep_timer_.expires_after(sweep_interval_);
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || active_ == 0) return;
    if (state_.stop.load(std::memory_order_relaxed)) stop_now();
    auto now = Clock::now();
    for (auto& c : connections_) c->check_deadline(now);
    publish();
    schedule_sweep();
  });
}

bool Worker::take_ticket() {
  if (!budget_) return true;
  if (*budget_ <= 0) return false;
  --*budget_;
  return true;
}

void Worker::note_connected() {
  if (connected_once_) return;
  connected_once_ = true;
  state_.any_connected.store(true);
}

void Worker::note_first_connect_failure(const std::string& reason) {
  state_.note_first_connect_failure(plan_.total_connections, reason);
}

bool Worker::counts(bool measured, Clock::time_point done) {
  if (!measured) {
    ++totals_.warmup_requests;
    return false;
  }
  // -d: a response that arrives after the window closed is not part of it.
  if (plan_.measure_end && done > *plan_.measure_end) return false;
  ++totals_.requests;
  if (!totals_.last_measured_completion || done > *totals_.last_measured_completion)
    totals_.last_measured_completion = done;
  return true;
}

void Worker::record_response(bool measured, Clock::time_point done, int64_t latency_us, int status,
                             size_t bytes) {
  ++completed_;
  bool failed = status >= 400;
  if (failed) ++failed_;
  if (counts(measured, done)) {
    ++totals_.responses;
    totals_.histogram.record(latency_us);
    totals_.bytes_read += static_cast<int64_t>(bytes);
    ++totals_.status[status > 0 && status < 1000 ? status : 0];
    if (failed) {
      ++totals_.errors;
      ++totals_.errors_by_kind[static_cast<int>(ErrorKind::kStatus)];
    }
  }
  publish();
}

void Worker::record_failure(bool measured, Clock::time_point done, ErrorKind kind) {
  ++completed_;
  ++failed_;
  if (counts(measured, done)) {
    ++totals_.errors;
    ++totals_.errors_by_kind[static_cast<int>(kind)];
  }
  publish();
}

void Worker::publish() {
  // Single writer: relaxed stores are plain moves, no locked instructions per request.
  pub_completed_.store(completed_, std::memory_order_relaxed);
  pub_failed_.store(failed_, std::memory_order_relaxed);
  pub_measured_.store(totals_.requests, std::memory_order_relaxed);
  pub_measured_failed_.store(totals_.errors, std::memory_order_relaxed);
}

void Worker::on_connection_done() {
  if (--active_ > 0) return;
  sweep_timer_.cancel();
  end_timer_.cancel();
}

}  // namespace loadlab::load
