#include "loadlab/controller/cell_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "loadlab/shared/histogram.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::controller {

namespace {

using Clock = std::chrono::steady_clock;
using TargetStream = grpc::ClientReaderWriterInterface<v1::TargetCommand, v1::TargetEvent>;
using LoadStream = grpc::ClientReaderWriterInterface<v1::LoadCommand, v1::LoadEvent>;

UsageResult from_proto(const v1::Usage& u) {
  UsageResult r;
  r.window_s = u.window_s();
  r.cpu_pct = u.cpu_pct();
  r.cpu_user_pct = u.cpu_user_pct();
  r.cpu_system_pct = u.cpu_system_pct();
  r.rss_kb_mean = u.rss_kb_mean();
  r.rss_kb_peak = u.rss_kb_peak();
  r.samples = u.samples();
  r.machine_cpu_pct = u.machine_cpu_pct();
  r.machine_cores = u.machine_cores();
  for (auto& p : u.series()) r.series.push_back({p.t_s(), p.cpu_pct(), p.rss_kb()});
  return r;
}

std::string exit_text(const v1::Exited& e) {
  return e.signal() ? "killed by signal " + std::to_string(e.signal())
                    : "exit status " + std::to_string(e.exit_code());
}

std::string status_text(const grpc::Status& st) {
  return st.error_message().empty() ? "gRPC status " + std::to_string(st.error_code()) : st.error_message();
}

// Cancels the registered calls when the current phase outlives its deadline, so that no
// blocking Read waits forever; the phase that ran out names the failure. Also cancels them
// when the run is shutting down (`*stop` nonzero), as the phase "interrupted".
class Watchdog {
 public:
  explicit Watchdog(const std::atomic<int>* stop) : stop_(stop), thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void watch(grpc::ClientContext* ctx) {
    std::lock_guard lock(mutex_);
    contexts_.push_back(ctx);
  }
  void arm(const std::string& phase, double seconds) {
    std::lock_guard lock(mutex_);
    phase_ = phase;
    limit_s_ = seconds;
    deadline_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    cv_.notify_all();
  }
  // The phase that ran out, or "" if none did.
  std::string expired() const {
    std::lock_guard lock(mutex_);
    return expired_;
  }
  CellError error(const std::string& phase, const std::string& message,
                  grpc::StatusCode code = grpc::StatusCode::UNKNOWN) const {
    std::lock_guard lock(mutex_);
    if (expired_ == kInterrupted)
      return CellError(expired_, "the run is shutting down (signal " + std::to_string(stop_->load()) + ")",
                       grpc::StatusCode::CANCELLED);
    if (!expired_.empty())
      return CellError(
          expired_,
          "phase '" + expired_ + "' ran out after " + std::to_string(static_cast<int>(limit_s_)) + " s",
          grpc::StatusCode::DEADLINE_EXCEEDED);
    return CellError(phase, message, code);
  }

 private:
  static constexpr const char* kInterrupted = "interrupted";
  static constexpr std::chrono::milliseconds kStopPoll{100};  // how soon a signal cancels the cell

  void loop() {
    std::unique_lock lock(mutex_);
    while (!done_) {
      if (!expired_.empty() || (phase_.empty() && !stop_)) {
        cv_.wait(lock);
        continue;
      }
      auto wake = phase_.empty() ? Clock::now() + kStopPoll : deadline_;
      if (stop_) wake = std::min(wake, Clock::now() + kStopPoll);
      cv_.wait_until(lock, wake);
      if (done_ || !expired_.empty()) continue;
      if (stop_ && stop_->load() != 0)
        expire(kInterrupted);
      else if (!phase_.empty() && Clock::now() >= deadline_)
        expire(phase_);
    }
  }
  void expire(const std::string& phase) {
    expired_ = phase;
    for (auto* c : contexts_) c->TryCancel();
  }
  const std::atomic<int>* stop_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<grpc::ClientContext*> contexts_;
  std::string phase_, expired_;
  double limit_s_ = 0;
  Clock::time_point deadline_;
  bool done_ = false;
  std::thread thread_;  // last
};

// What the load-stream reader threads hand to the cell's thread.
// What the stream reader threads hand to the cell's thread: an event of a load stream
// (agent = its index) or of the target stream (agent = kTarget), or a stream's end.
constexpr size_t kTarget = SIZE_MAX;
struct LoadMessage {
  size_t agent = 0;
  bool end = false;
  grpc::Status status;
  v1::LoadEvent event;
  v1::TargetEvent target_event;
};

class MessageQueue {
 public:
  void push(LoadMessage m) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(m));
    }
    cv_.notify_one();
  }
  LoadMessage pop() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !queue_.empty(); });
    auto m = std::move(queue_.front());
    queue_.pop_front();
    return m;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<LoadMessage> queue_;
};

struct LoadCall {
  grpc::ClientContext ctx;
  std::unique_ptr<LoadStream> stream;
  std::thread reader;
  LoadShare share;
  std::optional<v1::LoadResult> result;
  std::optional<UsageResult> usage;
  v1::Progress progress;
};

}  // namespace

std::vector<LoadShare> split_load(const Scenario& s, const Cell& c, size_t agents) {
  size_t n = std::max<size_t>(1, std::min<size_t>(agents, c.threads));
  std::vector<LoadShare> shares(n);
  for (size_t i = 0; i < n; ++i) {
    shares[i].threads = static_cast<uint32_t>(c.threads / n + (i < c.threads % n ? 1 : 0));
    shares[i].connections = shares[i].threads * s.load.connections_per_thread;
  }
  if (s.load.total_requests) {
    uint64_t total = *s.load.total_requests, given = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t part = i + 1 == n ? total - given : total * shares[i].threads / c.threads;
      shares[i].total_requests = part;
      given += part;
    }
  }
  return shares;
}

v1::TargetSpec target_spec(const Scenario& s, const Cell& c) {
  const auto& t = s.targets[c.target_index];
  v1::TargetSpec spec;
  if (!t.builtin.empty())
    spec.set_builtin(t.builtin);
  else
    spec.set_catalog(t.catalog);
  spec.set_delay_ms(c.delay_ms);
  spec.set_threads(t.server_threads);
  spec.set_body(t.body);
  return spec;
}

v1::LoadSpec load_spec(const Scenario& s, const Cell& c, const LoadShare& share,
                       const std::string& endpoint) {
  const auto& l = s.load;
  v1::LoadSpec spec;
  spec.set_endpoint(endpoint);
  spec.set_path(l.path);
  spec.set_method(l.method);
  for (auto& [k, v] : l.headers) (*spec.mutable_headers())[k] = v;
  spec.set_body(l.body);
  spec.set_threads(share.threads);
  spec.set_connections(share.connections);
  if (l.requests_per_thread) spec.set_requests_per_thread(*l.requests_per_thread);
  if (share.total_requests) spec.set_total_requests(*share.total_requests);
  if (l.duration_s) spec.set_duration_s(*l.duration_s);
  spec.set_warmup_s(l.warmup_s);
  spec.set_keep_alive(l.keep_alive);
  spec.set_timeout_ms(l.timeout_ms);
  // The cell's rate is shared by its load agents in proportion to their threads.
  if (l.rate > 0) spec.set_rate(l.rate * share.threads / c.threads);
  return spec;
}

namespace {
// Percentiles of the merged buckets of one histogram field of several results.
LatencyUs merged_latency(const std::vector<v1::LoadResult>& results,
                         const v1::Histogram& (v1::LoadResult::*hist)() const,
                         const v1::Latency& (v1::LoadResult::*lat)() const, nlohmann::json* out) {
  Histogram merged;
  double min_us = -1, max_us = 0, weighted_mean = 0;
  for (const auto& p : results) {
    const auto& ph = (p.*hist)();
    if (ph.highest_trackable() == 0) continue;
    Histogram h(static_cast<int64_t>(ph.highest_trackable()), static_cast<int>(ph.significant_digits()));
    for (auto& b : ph.buckets()) h.add_bucket(b.index(), b.count());
    if (!merged.merge(h))
      throw CellError("measure",
                      "a load agent's histogram has other parameters (an agent of another version?)");
    if (h.count() == 0) continue;
    const auto& l = (p.*lat)();
    min_us = min_us < 0 ? l.min_us() : std::min(min_us, l.min_us());
    max_us = std::max(max_us, l.max_us());
    weighted_mean += l.mean_us() * static_cast<double>(h.count());
  }
  auto j = merged.to_json();
  if (merged.count() > 0) {
    j["min"] = static_cast<int64_t>(min_us);
    j["max"] = static_cast<int64_t>(max_us);
    j["mean"] = weighted_mean / static_cast<double>(merged.count());
  }
  Histogram exact = Histogram::from_json(j);
  if (out) *out = j;
  auto pct = [&](double p) { return static_cast<double>(exact.value_at_percentile(p)); };
  return {pct(50),
          pct(90),
          pct(99),
          pct(99.9),
          static_cast<double>(exact.max()),
          exact.mean(),
          static_cast<double>(exact.min())};
}
}  // namespace

RepResult merge_load_results(const std::vector<v1::LoadResult>& results) {
  RepResult r;
  for (const auto& p : results) {
    r.requests += p.requests();
    r.errors += p.errors();
    r.duration_s = std::max(r.duration_s, p.duration_s());
    r.qps += p.qps();  // concurrent windows: rates add
    for (auto& [code, n] : p.status()) r.status[code] += n;
    for (auto& [kind, n] : p.error_kinds()) r.error_kinds[kind] += n;
    r.bytes_read += p.bytes_read();
    r.rate += p.rate();
    r.achieved_rate += p.achieved_rate();
    r.rate_not_held = r.rate_not_held || p.rate_not_held();
    r.latency_corrected = r.latency_corrected || p.latency_corrected();
    r.connects += p.connects();
  }
  r.latency_us = merged_latency(results, &v1::LoadResult::histogram, &v1::LoadResult::latency, &r.histogram);
  r.latency_uncorrected_us = merged_latency(results, &v1::LoadResult::histogram_uncorrected,
                                            &v1::LoadResult::latency_uncorrected, nullptr);
  // Connect times come as percentiles only: the part with the most connects stands for all.
  const v1::LoadResult* most = nullptr;
  for (const auto& p : results)
    if (!most || p.connects() > most->connects()) most = &p;
  if (most && most->connects() > 0) {
    const auto& c = most->connect();
    r.connect_us = {c.p50_us(), c.p90_us(), c.p99_us(), c.p999_us(), c.max_us(), c.mean_us(), c.min_us()};
  }
  return r;
}

RepResult run_repetition(const Placement& placement, const Scenario& s, const Cell& c,
                         const PhaseLimits& limits, const ProgressFn& progress,
                         const std::atomic<int>* stop) {
  auto log = component_logger("controller");
  // Declared before the watchdog, so that it is gone (no more cancels) before they are.
  grpc::ClientContext tctx;
  std::vector<std::unique_ptr<LoadCall>> calls;
  MessageQueue queue;
  Watchdog watchdog(stop);

  // 1. Host the target and wait until it is ready.
  watchdog.watch(&tctx);
  watchdog.arm("ready", limits.ready_s);
  std::unique_ptr<TargetStream> target(placement.target.stub->HostTarget(&tctx));
  bool target_closed = false;
  // The reason the target stream failed: its Exited event or its status.
  auto target_failure = [&](const std::string& phase) {
    target_closed = true;
    target->WritesDone();
    std::string exited;
    for (v1::TargetEvent ev; target->Read(&ev);)
      if (ev.has_exited()) exited = "target exited: " + ev.exited().output_tail();
    auto st = target->Finish();
    if (!exited.empty()) return watchdog.error(phase, exited);
    return watchdog.error(phase, status_text(st), st.error_code());
  };
  {
    v1::TargetCommand cmd;
    *cmd.mutable_spec() = target_spec(s, c);
    if (!target->Write(cmd)) throw target_failure("start");
  }
  RepResult rep;
  std::string endpoint;
  for (v1::TargetEvent ev; endpoint.empty();) {
    if (!target->Read(&ev)) throw target_failure("ready");
    if (ev.has_ready()) {
      endpoint = ev.ready().endpoint();
      rep.target_startup_ms = ev.ready().startup_ms();
    }
  }
  // Marks are sent while the target reader thread owns the reading side.
  auto mark = [&](v1::Mark::Kind kind, const std::string& phase) {
    v1::TargetCommand cmd;
    cmd.mutable_mark()->set_kind(kind);
    cmd.mutable_mark()->set_label(c.key());
    if (!target->Write(cmd))
      throw watchdog.error(phase, "target agent " + placement.target.name + " lost: cannot send a mark");
  };

  // 2. Start every load agent's share. One reader thread per stream, the target's
  // included, feeds one queue: a target agent lost mid-cell is noticed at once (its
  // stream fails on gRPC keepalive), not when the load ends.
  auto shares = split_load(s, c, placement.loads.size());
  std::thread target_reader([&queue, stream = target.get()] {
    for (LoadMessage m{kTarget, false, {}, {}, {}}; stream->Read(&m.target_event);) queue.push(m);
    queue.push({kTarget, true, {}, {}, {}});  // Finish() is called by the cell's thread
  });
  watchdog.arm("warmup", s.load.warmup_s + limits.warmup_extra_s);
  for (size_t i = 0; i < shares.size(); ++i) {
    auto call = std::make_unique<LoadCall>();
    call->share = shares[i];
    watchdog.watch(&call->ctx);
    call->stream = placement.loads[i].stub->RunLoad(&call->ctx);
    v1::LoadCommand cmd;
    *cmd.mutable_spec() = load_spec(s, c, shares[i], endpoint);
    call->stream->Write(cmd);
    call->stream->WritesDone();
    call->reader = std::thread([&queue, i, stream = call->stream.get()] {
      for (LoadMessage m{i, false, {}, {}, {}}; stream->Read(&m.event);) queue.push(m);
      queue.push({i, true, stream->Finish(), {}, {}});
    });
    calls.push_back(std::move(call));
  }
  auto stop_all = [&] {
    for (auto& call : calls) call->ctx.TryCancel();
    tctx.TryCancel();
    for (auto& call : calls)
      if (call->reader.joinable()) call->reader.join();
    if (target_reader.joinable()) target_reader.join();
    target_closed = true;
    target->Finish();
  };

  size_t started = 0, ended = 0, results = 0;
  bool have_usage = false;
  std::optional<CellError> failure;
  const double measure_limit =
      limits.measure_s > 0 ? limits.measure_s : (s.load.duration_s ? *s.load.duration_s + 60 : 24 * 3600.0);
  try {
    while (ended < calls.size() || !have_usage) {
      auto m = queue.pop();
      if (m.agent == kTarget) {
        if (m.end)
          throw watchdog.error(started ? "measure" : "warmup",
                               "target agent " + placement.target.name + " lost: the stream ended");
        if (m.target_event.has_usage()) {
          rep.server = from_proto(m.target_event.usage());
          have_usage = true;
        } else if (m.target_event.has_exited()) {
          // The target died under load: the cell cannot be measured any more.
          throw CellError(started ? "measure" : "warmup", "target exited (" +
                                                              exit_text(m.target_event.exited()) +
                                                              "): " + m.target_event.exited().output_tail());
        }
        continue;
      }
      auto& call = *calls[m.agent];
      const std::string& agent = placement.loads[m.agent].name;
      if (m.end) {
        ++ended;
        if (!m.status.ok())
          throw watchdog.error("measure", "load agent " + agent + ": " + status_text(m.status),
                               m.status.error_code());
        if (!call.result || !call.usage)
          throw CellError("measure", "load agent " + agent + " ended without a result and its usage");
        continue;
      }
      const auto& ev = m.event;
      if (ev.has_progress()) {
        call.progress = ev.progress();
        if (progress) {
          LiveProgress live;
          for (auto& other : calls) {
            live.elapsed_s = std::max(live.elapsed_s, other->progress.elapsed_s());
            live.requests += other->progress.requests();
            live.errors += other->progress.errors();
            live.qps += other->progress.qps();
            live.warmup = live.warmup || other->progress.warmup();
          }
          progress(live);
        }
      } else if (ev.has_measure_start()) {
        // The server's window opens with the first load agent's and closes with the last.
        if (started++ == 0) {
          mark(v1::Mark::RESET, "measure");
          watchdog.arm("measure", measure_limit);
        }
      } else if (ev.has_result()) {
        call.result = ev.result();
        if (++results == calls.size()) {
          watchdog.arm("usage", limits.stop_s);
          mark(v1::Mark::FINAL, "usage");  // answered through the target reader
        }
      } else if (ev.has_usage()) {
        call.usage = from_proto(ev.usage());
      }
    }
  } catch (const CellError& e) {
    failure = e;
  } catch (...) {
    stop_all();  // never unwind past running reader threads
    throw;
  }
  if (failure) {
    stop_all();
    throw *failure;
  }
  for (auto& call : calls) call->reader.join();

  // 3. Merge the load agents' results; stop the target.
  std::vector<v1::LoadResult> parts;
  for (auto& call : calls) parts.push_back(*call->result);
  RepResult merged = merge_load_results(parts);
  merged.server = rep.server;
  merged.target_startup_ms = rep.target_startup_ms;
  merged.target_agent = placement.target.name;
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& res = *calls[i]->result;
    merged.parts.push_back({placement.loads[i].name, calls[i]->share.threads, calls[i]->share.connections,
                            res.requests(), res.errors(), res.qps(), *calls[i]->usage});
    if (i == 0)
      merged.client = *calls[i]->usage;
    else
      merged.client.add(*calls[i]->usage);
  }
  watchdog.arm("stop", limits.stop_s);
  target_closed = true;
  target->WritesDone();
  target_reader.join();  // drains Exited; ends with the stream
  auto tstatus = target->Finish();
  if (!tstatus.ok()) log->warn("cell {}: target stream ended with: {}", c.key(), status_text(tstatus));
  return merged;
}

}  // namespace loadlab::controller
