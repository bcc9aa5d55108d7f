#include "worker.hpp"

#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <system_error>

#include "connection.hpp"
#include "h2_connection.hpp"
#include "plain_transport.hpp"
#include "secure_clients.hpp"

namespace loadlab::load {

namespace asio = boost::asio;

Worker::Worker(const RunPlan& plan, RunState& state, int index, int connections,
               std::optional<int64_t> budget)
    : plan_(plan),
      state_(state),
      index_(index),
      mail_fd_(ioc_.get_executor()),
      sweep_timer_(ioc_),
      end_timer_(ioc_),
      pace_fd_(ioc_.get_executor()),
      budget_(budget) {
  // Timeouts are enforced by a sweep; its period bounds how late a timeout fires.
  sweep_interval_ = std::clamp<Clock::duration>(plan.timeout / 10, std::chrono::milliseconds(1),
                                                std::chrono::milliseconds(100));
  const int mail = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (mail < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  mail_fd_.assign(mail);
  connections_.reserve(connections);
  for (int i = 0; i < connections; ++i) {
    if (plan.secure)
      connections_.push_back(plan.secure->make_connection(*this, i));
    else if (plan.h2)
      connections_.push_back(std::make_unique<H2Connection<PlainTransport>>(*this, i));
    else
      connections_.push_back(std::make_unique<Connection<PlainTransport>>(*this, i));
  }
  if (plan.rate_per_thread > 0) {
    // Poisson: each thread its own stream of draws (their sum is a Poisson process of the
    // worker's rate). Uniform: the threads' slots interleave (run_plan.hpp, `pace_threads`).
    schedule_ = plan.poisson ? Schedule(plan.pace_start, plan.rate_per_thread, plan.seed,
                                        static_cast<uint64_t>(plan.first_thread + index))
                             : Schedule(plan.pace_start + pace_phase(), plan.rate_per_thread);
    waiters_.reserve(connections);
    const int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "timerfd_create");
    pace_fd_.assign(fd);
  }
}

Worker::~Worker() = default;

void Worker::run() {
  active_ = static_cast<int>(connections_.size());
  if (active_ == 0) return;
  arm_end_timer();
  schedule_sweep();
  wait_for_mail();
  for (auto& c : connections_) c->start();
  ioc_.run();
  publish();
}

void Worker::arm_end_timer() {
  if (!plan_.measure_end()) return;
  end_timer_.expires_at(*plan_.measure_end());
  end_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) stop_now();
  });
}

Clock::duration Worker::pace_phase() const {
  const double g = plan_.first_thread + index_;
  return std::chrono::nanoseconds(
      static_cast<int64_t>(1e9 / plan_.rate_per_thread * g / std::max(plan_.pace_threads, 1)));
}

// A scheduled start: the uniform pace is anchored again at the window's instant, on the grid
// instant + phase + k / rate (k of either sign), from the first grid slot after the last slot
// a connection took. So every worker of the cell paces on one grid from the instant on, and
// the load goes on without a pause or a burst where the grids meet (one gap is shorter).
void Worker::anchor_pace_at_window() {
  if (plan_.rate_per_thread <= 0 || plan_.poisson || !plan_.scheduled_start) return;
  const auto last = next_slot_ > 0 ? schedule_.time_of(next_slot_ - 1) : plan_.pace_start;
  const double period_ns = 1e9 / plan_.rate_per_thread;
  auto anchor = plan_.measure_start() + pace_phase();
  if (anchor > last) {
    const auto back = std::ceil(static_cast<double>((anchor - last).count()) / period_ns);
    anchor -= std::chrono::nanoseconds(static_cast<int64_t>(back * period_ns));
  }
  schedule_ = Schedule(anchor, plan_.rate_per_thread);
  next_slot_ = schedule_.first_slot_at(last + std::chrono::nanoseconds(1));
}

void Worker::post_window_placed() { send_mail(mail_window_); }

void Worker::post_stop() { send_mail(mail_stop_); }

// Any thread. The flag is set before the write, so the worker that reads the eventfd sees it.
void Worker::send_mail(std::atomic<bool>& flag) {
  flag.store(true, std::memory_order_release);
  const uint64_t one = 1;
  [[maybe_unused]] auto written = ::write(mail_fd_.native_handle(), &one, sizeof one);
}

void Worker::wait_for_mail() {
  mail_fd_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                      [this](const boost::system::error_code& ec) { on_mail(ec); });
}

void Worker::on_mail(const boost::system::error_code& ec) {
  if (ec || active_ == 0) return;  // every connection is done: run() may return
  uint64_t count = 0;
  [[maybe_unused]] auto read = ::read(mail_fd_.native_handle(), &count, sizeof count);
  if (mail_window_.exchange(false, std::memory_order_acquire)) {
    arm_end_timer();
    anchor_pace_at_window();
  }
  if (mail_stop_.exchange(false, std::memory_order_acquire)) stop_now();
  if (active_ > 0) wait_for_mail();
}

void Worker::stop_now() {
  if (stopping_) return;
  stopping_ = true;
  for (auto& c : connections_) c->stop();
  cancel_pacer();  // no slot is sent after the stop
}

void Worker::cancel_pacer() {
  boost::system::error_code ignored;
  if (pace_fd_.is_open()) pace_fd_.cancel(ignored);
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

// Open loop. The connections share the worker's slots as a pool (schedule.hpp): a free
// connection takes the next slot (take_slot). A connection that is early for its slot waits in `waiters_`;
// every completion on this thread resumes the ones that are due (resume_due), and one timer covers the
// earliest waiter for when no completion comes first. The timer is re-armed only when a
// waiter is earlier than its expiry, and wakes at most once per `plan.pace_gap`: under load
// a wake-up hands out several slots instead of one. A slot is served early only by the
// pacing granularity (slot_due): a wake-up at one slot's time serves the slots of the next
// `plan.pace_granularity` too.
void Worker::wait_for_slot(Clock::time_point due, int index) {
  waiters_.push_back({due, index});
  std::push_heap(waiters_.begin(), waiters_.end(),
                 [](const Waiter& a, const Waiter& b) { return a.due > b.due; });
  arm_pacer();
}

void Worker::resume_due_slow(Clock::time_point now) {
  auto later = [](const Waiter& a, const Waiter& b) { return a.due > b.due; };
  while (!waiters_.empty() && slot_due(waiters_.front().due, now)) {
    std::pop_heap(waiters_.begin(), waiters_.end(), later);
    int index = waiters_.back().index;
    waiters_.pop_back();
    connections_[index]->resume(now);
  }
}

void Worker::arm_pacer() {
  if (waiters_.empty() || stopping_) return;
  auto at = std::max(waiters_.front().due, last_pace_ + plan_.pace_gap);
  if (pace_armed_ && *pace_armed_ <= at) return;  // the pending wake-up comes first
  pace_armed_ = at;
  set_pace_timer(at);
  if (pace_waiting_) return;  // the pending wait sees the new expiry
  pace_waiting_ = true;
  pace_fd_.async_wait(boost::asio::posix::descriptor_base::wait_read, PaceHandler{this});
}

// Setting the timer also clears an expiry not yet read, so the fd turns readable again (an
// edge for the reactor's edge-triggered epoll) exactly when `at` comes. An `at` already past
// expires at once.
void Worker::set_pace_timer(Clock::time_point at) {
  const int64_t ns = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count());
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  if (::timerfd_settime(pace_fd_.native_handle(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0)
    throw std::system_error(errno, std::generic_category(), "timerfd_settime");
}

// A wake-up may come early (an expiry of an earlier setting, seen after the timer was set
// later): only the slots due are resumed, and the pacer is armed again for the rest.
void Worker::on_pace(const boost::system::error_code& ec) {
  pace_waiting_ = false;
  pace_armed_.reset();
  if (ec) return;  // stopping
  last_pace_ = Clock::now();
  resume_due(last_pace_);
  arm_pacer();
}

bool Worker::take_ticket(Clock::time_point now) {
  if (budget_) {
    if (*budget_ <= 0) return false;
    --*budget_;
  }
  if (open_loop()) {
    ++totals_.begun;
    totals_.last_begun = now;
  }
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
  if (plan_.measure_end() && done > *plan_.measure_end()) return false;
  ++totals_.requests;
  if (!totals_.last_measured_completion || done > *totals_.last_measured_completion)
    totals_.last_measured_completion = done;
  return true;
}

namespace {
int64_t micros(Clock::duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); }
// A --csv-requests figure: saturates rather than wraps.
uint32_t micros32(int64_t us) { return static_cast<uint32_t>(std::clamp<int64_t>(us, 0, UINT32_MAX)); }
}  // namespace

void Worker::log_request(Clock::time_point origin, Clock::time_point done, int64_t first_byte_us, int status,
                         size_t bytes, const RequestCost& cost) {
  RequestRecord r{};
  r.start_offset_us = micros(origin - plan_.measure_start());
  r.total_us = micros32(micros(done - origin));
  r.connect_us = micros32(micros(cost.connect));
  r.tls_us = micros32(micros(cost.tls));
  r.first_byte_us = micros32(first_byte_us);
  r.bytes = std::min<uint64_t>(bytes, RequestRecord::kMaxBytes);
  r.status = static_cast<uint16_t>(status);
  r.reused = cost.reused;
  r.resumed = cost.resumed;
  totals_.log.push_back(r);
}

void Worker::record_response(bool measured, Clock::time_point origin, Clock::time_point sent,
                             Clock::time_point first_byte, Clock::time_point done, int status, size_t bytes,
                             const RequestCost& cost) {
  ++completed_;
  if (in_window(done)) ++totals_.window_completions;
  bool failed = status >= 400;
  if (failed) ++failed_;
  if (counts(measured, done)) {
    int64_t latency_us = micros(done - origin);
    int64_t first_byte_us = micros(first_byte - sent);
    ++totals_.responses;
    totals_.histogram.record(latency_us);
    latency_sum_us_ += latency_us;
    totals_.first_byte_histogram.record(first_byte_us);
    if (open_loop()) totals_.histogram_uncorrected.record(micros(done - sent));
    if (plan_.log_requests) log_request(origin, done, first_byte_us, status, bytes, cost);
    totals_.bytes_read += static_cast<int64_t>(bytes);
    ++totals_.status[status > 0 && status < 1000 ? status : 0];
    if (failed) {
      ++totals_.errors;
      ++totals_.errors_by_kind[static_cast<int>(ErrorKind::kStatus)];
    }
  }
  publish();
}

void Worker::record_failure(bool measured, Clock::time_point origin, Clock::time_point done, ErrorKind kind,
                            const RequestCost& cost) {
  ++completed_;
  ++failed_;
  if (in_window(done)) ++totals_.window_completions;
  if (counts(measured, done)) {
    ++totals_.errors;
    ++totals_.errors_by_kind[static_cast<int>(kind)];
    if (plan_.log_requests) log_request(origin, done, 0, 0, 0, cost);
  }
  publish();
}

bool Worker::in_window(Clock::time_point t) const {
  return t >= plan_.measure_start() && !(plan_.measure_end() && t > *plan_.measure_end());
}

void Worker::record_connect(Clock::time_point started, Clock::time_point done) {
  if (!in_window(done)) return;
  ++totals_.connects;
  totals_.connect_histogram.record(micros(done - started));
}

void Worker::record_handshake(Clock::time_point started, Clock::time_point done, bool resumed) {
  if (!in_window(done)) return;
  ++totals_.tls_handshakes;
  if (resumed) ++totals_.tls_resumed;
  totals_.tls_histogram.record(micros(done - started));
}

void Worker::record_quic_handshake(Clock::time_point started, Clock::time_point done, bool resumed,
                                   bool early_data) {
  if (!in_window(done)) return;
  ++totals_.connects;
  if (early_data) ++totals_.tls_early_data;
  record_handshake(started, done, resumed);
}

void Worker::publish() {
  // Single writer: relaxed stores are plain moves, no locked instructions per request.
  pub_completed_.store(completed_, std::memory_order_relaxed);
  pub_failed_.store(failed_, std::memory_order_relaxed);
  pub_measured_.store(totals_.requests, std::memory_order_relaxed);
  pub_measured_failed_.store(totals_.errors, std::memory_order_relaxed);
  pub_latency_sum_us_.store(latency_sum_us_, std::memory_order_relaxed);
}

void Worker::on_connection_done() {
  if (--active_ > 0) return;
  sweep_timer_.cancel();
  end_timer_.cancel();
  cancel_pacer();
  boost::system::error_code ignored;
  mail_fd_.cancel(ignored);
}

}  // namespace loadlab::load
