#include "load_runner.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fd_limit.hpp"
#include "loadlab/shared/logging.hpp"
#include "quic_tls_client.hpp"
#include "request_log.hpp"
#include "run_plan.hpp"
#include "tls_client.hpp"
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
    if (plan.measure_end)
      end = stopped_at ? std::min(*plan.measure_end, *stopped_at) : *plan.measure_end;
    else if (t.last_begun)
      end = *t.last_begun + std::chrono::nanoseconds(1);
    if (!end || *end <= plan.measure_start) continue;
    window = std::max(window, *end - plan.measure_start);
    int64_t due = w->slots_due_before(*end);
    if (static_cast<double>(t.begun) < std::floor(0.99 * static_cast<double>(due))) result.rate_held = false;
  }
  // -n/--total: the last slot's own interval belongs to the window.
  if (!plan.measure_end && window > Clock::duration::zero())
    window += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / plan.rate_per_thread));
  double s = seconds(window);
  result.achieved_rate = s > 0 ? static_cast<double>(begun) / s : 0;
}

}  // namespace

LoadRunner::LoadRunner(LoadOptions options, RunCallbacks callbacks)
    : options_(std::move(options)), callbacks_(std::move(callbacks)) {
  try {
    validate(options_);
  } catch (const InputError& e) {
    invalid_ = e.what();
  }
}

LoadRunner::~LoadRunner() = default;

LoadResult LoadRunner::run() {
  auto log = component_logger("load");
  const LoadOptions& o = options_;
  LoadResult result;
  result.threads = o.threads;
  result.connections = o.connections;
  result.rate = o.rate.value_or(0);
  if (!invalid_.empty()) {
    result.error = invalid_;
    return result;
  }

  Url url = parse_url(o.url);
  std::string host_port = url.authority.find(':') != std::string::npos && url.authority.back() != ']'
                              ? url.authority
                              : url.authority + ":" + std::to_string(url.port);
  RunPlan plan;
  std::string resolve_error;
  plan.endpoints = resolve(url, resolve_error);
  if (plan.endpoints.empty()) {
    result.error = "cannot connect to " + host_port + ": " + resolve_error;
    return result;
  }
  std::unique_ptr<TlsClient> tls;
  std::unique_ptr<QuicTlsClient> quic;
  if (uses_h3(o)) {
    std::string tls_error;
    quic = QuicTlsClient::create(o, url, tls_error);
    if (!quic) {
      result.error = tls_error;
      return result;
    }
    plan.quic = quic.get();
    result.tls = true;
  } else if (url.tls) {
    std::string tls_error;
    tls = TlsClient::create(o, url, tls_error);
    if (!tls) {
      result.error = tls_error;
      return result;
    }
    plan.tls = tls.get();
    result.tls = true;
  }
  plan.request = serialize_request(o, url);
  if (uses_h2(o) || uses_h3(o)) {
    plan.h2 = uses_h2(o);
    plan.h3 = uses_h3(o);
    plan.streams = streams_of(o);
    plan.h2_headers = h2_request_headers(o, url);
    plan.body = o.body;
  }
  plan.timeout = std::chrono::milliseconds(o.timeout_ms);
  plan.keep_alive = o.keep_alive;
  plan.head = o.method == "HEAD";
  plan.total_connections = o.connections;
  plan.rate_per_thread = o.rate ? *o.rate / o.threads : 0;
  plan.log_requests = !o.csv_requests.empty();
  // Descriptors: one per connection, plus stdio, epoll and eventfds per thread and a margin.
  int64_t fd_limit = raise_open_files_limit();
  int64_t fds_needed = int64_t{o.connections} + 3 * int64_t{o.threads} + 16;
  if (fd_limit >= 0 && fd_limit < fds_needed)
    log->warn("open-files limit {} is below the {} descriptors {} connections need: connects will fail",
              fd_limit, fds_needed, o.connections);
  auto start = Clock::now();
  plan.pace_start = start;
  plan.measure_start =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup_s));
  if (o.duration_s)
    plan.measure_end = plan.measure_start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(*o.duration_s));

  RunState state;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < o.threads; ++t) {
    int conns = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    std::optional<int64_t> budget;
    if (o.requests_per_thread) budget = *o.requests_per_thread;
    if (o.total_requests)
      budget = *o.total_requests / o.threads + (t < *o.total_requests % o.threads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(plan, state, conns, budget));
  }
  log->info("{} threads, {} connections, target {} ({} bytes per request)", o.threads, o.connections,
            host_port, plan.request.size());

  // Without warm-up the window opens now: say so before the first request, so the target's
  // usage window (opened by the controller on this event) covers the whole load.
  bool measure_started = false;
  if (o.warmup_s <= 0) {
    measure_started = true;
    if (callbacks_.on_measure_start) callbacks_.on_measure_start();
  }
  std::mutex mutex;
  std::condition_variable cv;
  int finished = 0;
  std::vector<std::thread> threads;
  threads.reserve(workers.size());
  for (auto& w : workers) {
    threads.emplace_back([&, worker = w.get()] {
      worker->run();
      std::lock_guard lock(mutex);
      ++finished;
      cv.notify_one();
    });
  }

  // Control loop: progress, the measure-start event, and stop requests. Polls the
  // shutdown flag because a signal handler cannot notify a condition variable.
  bool stop_posted = false;
  std::optional<Clock::time_point> stopped_at;
  auto next_progress = start + progress_interval;
  int64_t last_count = 0;
  bool last_warmup = true;
  auto last_progress_time = start;
  for (;;) {
    {
      std::unique_lock lock(mutex);
      // Wakes at the end of warm-up exactly, else every 20 ms for progress and the signal flag.
      auto wake = Clock::now() + 20ms;
      if (!measure_started) wake = std::min(wake, plan.measure_start);
      if (cv.wait_until(lock, wake, [&] { return finished == o.threads; })) break;
    }
    auto now = Clock::now();
    if (!measure_started && now >= plan.measure_start) {
      measure_started = true;
      if (callbacks_.on_measure_start) callbacks_.on_measure_start();
    }
    if (now >= next_progress) {
      bool warmup = now < plan.measure_start;
      Progress p;
      p.elapsed_s = seconds(now - start);
      p.warmup = warmup;
      for (const auto& w : workers) {
        p.requests += warmup ? w->completed() : w->measured();
        p.errors += warmup ? w->failed() : w->measured_failed();
      }
      // The first interval after warm-up counts from the start of the measured window.
      int64_t base = warmup == last_warmup ? last_count : 0;
      auto since = warmup == last_warmup ? last_progress_time : plan.measure_start;
      double dt = seconds(now - since);
      p.qps = dt > 0 ? (p.requests - base) / dt : 0;
      last_count = p.requests;
      last_warmup = warmup;
      last_progress_time = now;
      if (callbacks_.on_progress) callbacks_.on_progress(p);
      while (next_progress <= now) next_progress += progress_interval;
    }
    bool interrupted = shutdown_.load(std::memory_order_relaxed);
    if (!stop_posted && (interrupted || state.stop.load())) {
      stop_posted = true;
      stopped_at = now;
      result.interrupted = interrupted;
      state.stop.store(true);
      for (auto& w : workers) w->post_stop();
    }
  }
  for (auto& t : threads) t.join();
  auto end = Clock::now();
  // Workers may have stopped (target unreachable) before the loop above saw the flag.
  if (!stopped_at && (state.stop.load() || shutdown_.load(std::memory_order_relaxed))) {
    stopped_at = end;
    result.interrupted = shutdown_.load(std::memory_order_relaxed);
  }
  if (!measure_started && end >= plan.measure_start && !stopped_at && callbacks_.on_measure_start)
    callbacks_.on_measure_start();

  std::array<int64_t, 1000> status{};
  std::optional<Clock::time_point> last_completion;
  for (const auto& w : workers) {
    const WorkerTotals& t = w->totals();
    result.histogram.merge(t.histogram);
    result.histogram_uncorrected.merge(plan.rate_per_thread > 0 ? t.histogram_uncorrected : t.histogram);
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
    for (int k = 0; k < kErrorKindCount; ++k) result.errors_by_kind[k] += t.errors_by_kind[k];
    for (size_t s = 0; s < status.size(); ++s) status[s] += t.status[s];
    if (t.last_measured_completion && (!last_completion || *t.last_measured_completion > *last_completion))
      last_completion = t.last_measured_completion;
  }
  for (size_t s = 0; s < status.size(); ++s)
    if (status[s]) result.status[static_cast<int>(s)] = status[s];

  if (plan.measure_end) {
    // Open loop: connections end after their last slot, a little before the window does;
    // the window is still the whole of it unless a stop cut it short.
    auto window_end = stopped_at ? std::min(*plan.measure_end, *stopped_at) : *plan.measure_end;
    result.duration_s = std::max(0.0, seconds(window_end - plan.measure_start));
  } else if (last_completion) {
    result.duration_s = std::max(0.0, seconds(*last_completion - plan.measure_start));
  }
  result.qps = result.duration_s > 0 ? result.requests / result.duration_s : 0;
  if (plan.rate_per_thread > 0) judge_rate(plan, workers, stopped_at, result);

  if (plan.log_requests) {
    std::vector<RequestLog*> logs;
    for (auto& w : workers) logs.push_back(&w->log());
    RequestCsvRun run;
    if (plan.h2) run.protocol = tls ? "h2" : "h2c";
    if (tls) run.tls_version = tls->version();
    if (plan.h3) {
      run.protocol = "h3";
      run.tls_version = "1.3";
    }
    write_request_csv(o.csv_requests, std::move(logs), run, &result.csv_error);
  }
  {
    std::lock_guard lock(state.error_mutex);
    result.tls_error = state.first_tls_error;
  }

  if (!state.any_connected.load()) {
    std::lock_guard lock(state.error_mutex);
    if (!state.first_connect_error.empty())
      result.error = "cannot connect to " + host_port + ": " + state.first_connect_error;
  }
  return result;
}

}  // namespace loadlab::load
