#include "load_runner.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fd_limit.hpp"
#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/logging.hpp"
#include "request_log.hpp"
#include "run_plan.hpp"
#include "worker.hpp"

namespace loadlab::load {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Resolves the URL's host once, before any thread starts; empty with `error` on failure.
std::vector<asio::ip::tcp::endpoint> resolve(const Url& url, std::string& error) {
  asio::io_context ioc;
  asio::ip::tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  auto results =
      resolver.resolve(url.host, std::to_string(url.port), asio::ip::resolver_base::numeric_service, ec);
  std::vector<asio::ip::tcp::endpoint> endpoints;
  if (ec) {
    error = ec.message();
    return endpoints;
  }
  for (const auto& r : results) endpoints.push_back(r.endpoint());
  if (endpoints.empty()) error = "no address";
  return endpoints;
}

// Open loop: did the pacing begin the slots its schedule had due? The window ends at the
// end of -d (or the stop), else at the last measured request a thread began.
void judge_rate(const RunPlan& plan, const std::vector<std::unique_ptr<Worker>>& workers,
                std::optional<Clock::time_point> stopped_at, LoadResult& result) {
  int64_t begun = 0;
  Clock::duration window{};
  for (const auto& w : workers) {
    const WorkerTotals& t = w->totals();
    begun += t.begun;
    std::optional<Clock::time_point> end;
    if (plan.measure_end())
      end = stopped_at ? std::min(*plan.measure_end(), *stopped_at) : *plan.measure_end();
    else if (t.last_begun)
      end = *t.last_begun + std::chrono::nanoseconds(1);
    if (!end || *end <= plan.measure_start()) continue;
    window = std::max(window, *end - plan.measure_start());
    int64_t due = w->slots_due_before(*end);
    if (static_cast<double>(t.begun) < std::floor(0.99 * static_cast<double>(due))) result.rate_held = false;
  }
  // -n/--total: the last slot's own interval belongs to the window.
  if (!plan.measure_end() && window > Clock::duration::zero())
    window += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / plan.rate_per_thread));
  double s = seconds(window);
  result.achieved_rate = s > 0 ? static_cast<double>(begun) / s : 0;
}

std::string host_port_of(const Url& url) {
  return url.authority.find(':') != std::string::npos && url.authority.back() != ']'
             ? url.authority
             : url.authority + ":" + std::to_string(url.port);
}

// The plan of a run: the URL resolved, its TLS or QUIC client made (by `make_secure`, the
// secure family's, which an https:// or h3 run needs), the request serialized. "" when it can
// run, else why not.
std::string make_plan(const LoadOptions& o, const Url& url, MakeSecureClients make_secure, RunPlan& plan,
                      std::unique_ptr<SecureClients>& secure, LoadResult& result) {
  std::string error;
  plan.endpoints = resolve(url, error);
  if (plan.endpoints.empty()) return "cannot connect to " + host_port_of(url) + ": " + error;
  plan.h2 = uses_h2(o);
  plan.h3 = uses_h3(o);
  if (url.tls || plan.h3) {
    if (!make_secure)
      return plan.h3 ? "--protocol h3 is run by loadlab-load-h3, not this program"
                     : "https:// is run by loadlab-load-secure, not this program";
    secure = make_secure(o, url, plan, error);
    if (!secure) return error;
    plan.secure = secure.get();
    result.tls = true;
  }
  plan.request = serialize_request(o, url);
  if (plan.h2 || plan.h3) {
    plan.streams = streams_of(o);
    plan.h2_headers = h2_request_headers(o, url);
    plan.body = o.body;
  }
  plan.timeout = std::chrono::milliseconds(o.timeout_ms);
  plan.keep_alive = o.keep_alive;
  plan.head = o.method == "HEAD";
  plan.total_connections = o.connections;
  plan.rate_per_thread = o.rate ? *o.rate / o.threads : 0;
  plan.first_thread = o.pace_share ? static_cast<int>(o.pace_share->first) : 0;
  plan.pace_threads = o.pace_share ? static_cast<int>(o.pace_share->second) : o.threads;
  plan.poisson = poisson_arrivals(o);
  plan.seed = o.seed.value_or(1);
  plan.pace_granularity = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::micro>(pace_granularity_us_of(o)));
  plan.log_requests = !o.csv_requests.empty();
  return "";
}

// The run's clock: pacing from `start`, the measured window after the warm-up (or, with a
// scheduled start, when the signal names it).
void place_windows(const LoadOptions& o, Clock::time_point start, RunPlan& plan) {
  plan.pace_start = start;
  plan.warmup_end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup_s));
  plan.scheduled_start = o.scheduled_start;
  if (o.scheduled_start) return;
  std::optional<Clock::time_point> end;
  if (o.duration_s)
    end = plan.warmup_end +
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*o.duration_s));
  plan.window.place(plan.warmup_end, end);
}

// Descriptors: one per connection, plus per thread its epoll, the reactor's interrupter and
// timerfd, the worker's mailbox and pacer (worker.hpp), and a margin for stdio and the rest.
void check_open_files(const LoadOptions& o) {
  const int64_t fd_limit = raise_open_files_limit();
  const int64_t fds_needed = int64_t{o.connections} + 5 * int64_t{o.threads} + 16;
  if (fd_limit >= 0 && fd_limit < fds_needed)
    component_logger("load")->warn(
        "open-files limit {} is below the {} descriptors {} connections need: connects will fail", fd_limit,
        fds_needed, o.connections);
}

// One worker per thread, the connections and any request budget spread over them.
std::vector<std::unique_ptr<Worker>> make_workers(const LoadOptions& o, const RunPlan& plan,
                                                  RunState& state) {
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < o.threads; ++t) {
    int conns = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    std::optional<int64_t> budget;
    if (o.requests_per_thread) budget = *o.requests_per_thread;
    if (o.total_requests)
      budget = *o.total_requests / o.threads + (t < *o.total_requests % o.threads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(plan, state, t, conns, budget));
  }
  return workers;
}

// The progress figures at `now`, each interval's rate from the previous one's count (the first
// interval after warm-up from the start of the measured window).
class ProgressMeter {
 public:
  ProgressMeter(Clock::time_point start, Clock::duration interval)
      : start_(start), interval_(interval), next_(start + interval), last_time_(start) {}

  std::optional<Progress> tick(Clock::time_point now, const std::vector<std::unique_ptr<Worker>>& workers,
                               Clock::time_point measure_start) {
    if (now < next_) return std::nullopt;
    const bool warmup = now < measure_start;
    Progress p;
    p.elapsed_s = seconds(now - start_);
    p.warmup = warmup;
    int64_t latency_sum_us = 0;
    for (const auto& w : workers) {
      p.requests += warmup ? w->completed() : w->measured();
      p.errors += warmup ? w->failed() : w->measured_failed();
      latency_sum_us += w->measured_latency_sum_us();
    }
    const int64_t base = warmup == last_warmup_ ? last_count_ : 0;
    const auto since = warmup == last_warmup_ ? last_time_ : measure_start;
    const double dt = seconds(now - since);
    p.qps = dt > 0 ? (p.requests - base) / dt : 0;
    if (!warmup) {
      // The latency sum and the count are published apart: an interval's mean is off by at
      // most one request's latency over the interval's requests.
      const int64_t base_sum = last_warmup_ ? 0 : last_latency_sum_us_;
      const int64_t n = p.requests - base;
      p.latency_mean_ms = n > 0 ? std::max<int64_t>(0, latency_sum_us - base_sum) / 1000.0 / n : 0;
    }
    last_latency_sum_us_ = latency_sum_us;
    last_count_ = p.requests;
    last_warmup_ = warmup;
    last_time_ = now;
    while (next_ <= now) next_ += interval_;
    return p;
  }

 private:
  Clock::time_point start_;
  Clock::duration interval_;
  Clock::time_point next_;
  int64_t last_count_ = 0;
  int64_t last_latency_sum_us_ = 0;
  bool last_warmup_ = true;
  Clock::time_point last_time_;
};

// Every thread's totals into the result; the latest measured completion of any.
std::optional<Clock::time_point> merge_totals(const std::vector<std::unique_ptr<Worker>>& workers,
                                              bool open_loop, LoadResult& result) {
  std::array<int64_t, 1000> status{};
  std::optional<Clock::time_point> last_completion;
  for (const auto& w : workers) {
    const WorkerTotals& t = w->totals();
    result.histogram.merge(t.histogram);
    result.histogram_uncorrected.merge(open_loop ? t.histogram_uncorrected : t.histogram);
    result.connect_histogram.merge(t.connect_histogram);
    result.connects += t.connects;
    result.tls_histogram.merge(t.tls_histogram);
    result.tls_handshakes += t.tls_handshakes;
    result.tls_resumed += t.tls_resumed;
    result.tls_early_data += t.tls_early_data;
    result.first_byte_histogram.merge(t.first_byte_histogram);
    result.requests += t.requests;
    result.responses += t.responses;
    result.errors += t.errors;
    result.bytes_read += t.bytes_read;
    result.warmup_requests += t.warmup_requests;
    result.window_completions += t.window_completions;
    for (int k = 0; k < kErrorKindCount; ++k) result.errors_by_kind[k] += t.errors_by_kind[k];
    for (size_t s = 0; s < status.size(); ++s) status[s] += t.status[s];
    if (t.last_measured_completion && (!last_completion || *t.last_measured_completion > *last_completion))
      last_completion = t.last_measured_completion;
  }
  for (size_t s = 0; s < status.size(); ++s)
    if (status[s]) result.status[static_cast<int>(s)] = status[s];
  return last_completion;
}

// The measured window, the rate over it, and (open loop) whether the pacing held.
void measure_window(const RunPlan& plan, const std::vector<std::unique_ptr<Worker>>& workers,
                    std::optional<Clock::time_point> stopped_at,
                    std::optional<Clock::time_point> last_completion, LoadResult& result) {
  if (plan.measure_end()) {
    // Open loop: connections end after their last slot, a little before the window does;
    // the window is still the whole of it unless a stop cut it short.
    auto window_end = stopped_at ? std::min(*plan.measure_end(), *stopped_at) : *plan.measure_end();
    result.duration_s = std::max(0.0, seconds(window_end - plan.measure_start()));
  } else if (last_completion) {
    result.duration_s = std::max(0.0, seconds(*last_completion - plan.measure_start()));
  }
  result.qps = result.duration_s > 0 ? result.requests / result.duration_s : 0;
  result.completion_rate = result.duration_s > 0 ? result.window_completions / result.duration_s : 0;
  if (plan.window.placed() && result.duration_s > 0) {
    const auto open = plan.measure_start();
    result.window_open_ns = std::chrono::nanoseconds(open.time_since_epoch()).count();
    result.window_close_ns =
        result.window_open_ns + static_cast<int64_t>(std::llround(result.duration_s * 1e9));
  }
  if (plan.rate_per_thread > 0) judge_rate(plan, workers, stopped_at, result);
}

// --csv-requests: every measured request of every thread, one row each.
void write_csv(const LoadOptions& o, const RunPlan& plan, std::vector<std::unique_ptr<Worker>>& workers,
               LoadResult& result) {
  std::vector<RequestLog*> logs;
  for (auto& w : workers) logs.push_back(&w->log());
  RequestCsvRun run;
  if (plan.h2) run.protocol = plan.secure ? "h2" : "h2c";
  if (plan.h3) run.protocol = "h3";
  if (plan.secure) run.tls_version = plan.secure->tls_version();
  write_request_csv(o.csv_requests, std::move(logs), run, &result.csv_error);
}

}  // namespace

LoadRunner::LoadRunner(LoadOptions options, RunCallbacks callbacks, MakeSecureClients make_secure)
    : options_(std::move(options)), callbacks_(std::move(callbacks)), make_secure_(make_secure) {
  try {
    complete_and_validate(options_);
  } catch (const InputError& e) {
    invalid_ = e.what();
  }
}

LoadRunner::~LoadRunner() = default;

LoadResult LoadRunner::run() {
  const LoadOptions& o = options_;
  LoadResult result;
  result.threads = o.threads;
  result.connections = o.connections;
  result.rate = o.rate.value_or(0);
  if (o.rate) {
    result.arrivals = poisson_arrivals(o) ? proto::kPoissonArrivals : proto::kUniformArrivals;
    result.pace_granularity_us = pace_granularity_us_of(o);
  }
  if (!invalid_.empty()) {
    result.error = invalid_;
    return result;
  }
  const Url url = parse_url(o.url);
  RunPlan plan;
  std::unique_ptr<SecureClients> secure;
  if (auto error = make_plan(o, url, make_secure_, plan, secure, result); !error.empty()) {
    result.error = error;
    return result;
  }
  check_open_files(o);
  place_windows(o, Clock::now(), plan);
  RunState state;
  auto workers = make_workers(o, plan, state);
  component_logger("load")->info("{} threads, {} connections, target {} ({} bytes per request)", o.threads,
                                 o.connections, host_port_of(url), plan.request.size());
  const auto stopped_at = run_workers(plan, state, workers, result);
  const auto last_completion = merge_totals(workers, plan.rate_per_thread > 0, result);
  measure_window(plan, workers, stopped_at, last_completion, result);
  if (plan.log_requests) write_csv(o, plan, workers, result);
  std::lock_guard lock(state.error_mutex);
  result.tls_error = state.first_tls_error;
  if (!state.any_connected.load() && !state.first_connect_error.empty())
    result.error = "cannot connect to " + host_port_of(url) + ": " + state.first_connect_error;
  return result;
}

// The threads run their workers; this one reports progress and the measure start, and passes a
// stop on. Returns when the stop came (a signal, or the workers' own: the target unreachable),
// none when the load ran out by itself.
void LoadRunner::place_scheduled_window(RunPlan& plan, std::vector<std::unique_ptr<Worker>>& workers) {
  const auto named = start_at_.load();
  if (named == 0 || plan.window.placed()) return;
  // A late instant opens the window now (read after the instant was: never before the signal
  // came): what began before it was begun as warm-up.
  const auto open = std::max(Clock::now(), Clock::time_point(Clock::duration(named)));
  plan.window.place(open, open + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options_.duration_s.value_or(0))));
  for (auto& w : workers) w->post_window_placed();
}

namespace {

// The workers' threads, and how many have finished.
struct Finished {
  std::mutex mutex;
  std::condition_variable cv;
  size_t count = 0;
};

// One thread per worker; each counts itself in `finished` when its worker returns.
std::vector<std::thread> start_threads(std::vector<std::unique_ptr<Worker>>& workers, Finished& finished) {
  std::vector<std::thread> threads;
  threads.reserve(workers.size());
  for (auto& w : workers) {
    threads.emplace_back([&finished, worker = w.get()] {
      worker->run();
      std::lock_guard lock(finished.mutex);
      ++finished.count;
      finished.cv.notify_one();
    });
  }
  return threads;
}

}  // namespace

std::optional<Clock::time_point> LoadRunner::run_workers(RunPlan& plan, RunState& state,
                                                         std::vector<std::unique_ptr<Worker>>& workers,
                                                         LoadResult& result) {
  // Without warm-up the window opens now: say so before the first request, so the target's
  // usage window (opened by the controller on this event) covers the whole load.
  bool measure_started = false;
  auto open_window = [&] {
    measure_started = true;
    if (callbacks_.on_measure_start) callbacks_.on_measure_start();
  };
  if (options_.warmup_s <= 0 && !plan.scheduled_start) open_window();
  bool ready = false;  // --start-on-signal: warm-up over, said once
  Finished finished;
  auto threads = start_threads(workers, finished);
  // Polls the shutdown flag because a signal handler cannot notify a condition variable.
  ProgressMeter progress(plan.pace_start, progress_interval);
  std::optional<Clock::time_point> stopped_at;
  for (;;) {
    {
      std::unique_lock lock(finished.mutex);
      // Wakes at the end of warm-up exactly, else every 20 ms for progress and the signal flag.
      auto wake = Clock::now() + 20ms;
      if (!measure_started) wake = std::min(wake, plan.measure_start());
      if (plan.scheduled_start && !ready) wake = std::min(wake, plan.warmup_end);
      if (finished.cv.wait_until(lock, wake, [&] { return finished.count == workers.size(); })) break;
    }
    auto now = Clock::now();
    if (plan.scheduled_start) {
      if (!ready && now >= plan.warmup_end) {
        ready = true;
        if (callbacks_.on_ready) callbacks_.on_ready();
      }
      // The instant is named ahead of itself: this loop then wakes for it exactly.
      place_scheduled_window(plan, workers);
      now = Clock::now();
    }
    if (!measure_started && now >= plan.measure_start()) open_window();
    if (auto p = progress.tick(now, workers, plan.measure_start()); p && callbacks_.on_progress)
      callbacks_.on_progress(*p);
    const bool interrupted = shutdown_.load(std::memory_order_relaxed);
    if (!stopped_at && (interrupted || state.stop.load())) {
      stopped_at = now;
      result.interrupted = interrupted;
      state.stop.store(true);
      for (auto& w : workers) w->post_stop();
    }
  }
  for (auto& t : threads) t.join();
  const auto end = Clock::now();
  // Workers may have stopped (target unreachable) before the loop above saw the flag.
  if (!stopped_at && (state.stop.load() || shutdown_.load(std::memory_order_relaxed))) {
    stopped_at = end;
    result.interrupted = shutdown_.load(std::memory_order_relaxed);
  }
  if (!measure_started && end >= plan.measure_start() && !stopped_at && callbacks_.on_measure_start)
    callbacks_.on_measure_start();
  return stopped_at;
}

}  // namespace loadlab::load
