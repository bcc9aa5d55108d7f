#include "lab/repetition_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "lab/cell_specs.hpp"
#include "lab/clock_offset.hpp"
#include "lab/load_session.hpp"
#include "lab/stream_events.hpp"
#include "lab/target_session.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "results/quality_flags.hpp"
#include "results/result_merge.hpp"

namespace loadlab::controller {

using namespace std::chrono_literals;

namespace {

std::string exit_text(const v1::Exited& e) {
  return e.signal() ? "killed by signal " + std::to_string(e.signal())
                    : "exit status " + std::to_string(e.exit_code());
}

// What a repetition's figures are merged from once its streams ended.
struct RepetitionParts {
  const Scenario& scenario;
  const Cell& cell;
  const TargetSession& target;
  const std::vector<std::unique_ptr<LoadSession>>& loads;
  const v1::Usage& server;  // the target's usage over the window
  bool scheduled = false;   // a scheduled start, at start_ns in the controller's clock
  int64_t start_ns = 0;
  int64_t window_ns = 0;
};

// Counters over the window: its instructions over its requests.
void add_counted_instructions(const RepetitionParts& p, v1::Repetition& r) {
  if (!p.server.has_instructions()) {
    r.set_instructions_unavailable(p.server.instructions_unavailable().empty()
                                       ? "agent " + p.target.agent_name() +
                                             " did not count them (an older agent?)"
                                       : p.server.instructions_unavailable());
  } else if (r.requests() == 0) {
    r.set_instructions_unavailable("the window had no request");
  } else {
    r.set_instructions_per_request(static_cast<double>(p.server.instructions()) / r.requests());
  }
}

// Where each window opened against the instant chosen, in the controller's clock; the skew
// between the earliest and the latest, within the sum of their clocks' uncertainties.
void add_skew(const RepetitionParts& p, v1::Repetition& r) {
  struct Open {
    int64_t at_ns;
    int64_t uncertainty_ns;
  };
  std::vector<Open> opens;
  for (size_t i = 0; i < p.loads.size(); ++i) {
    const auto& result = p.loads[i]->result();
    if (result.window_open_ns() == 0) continue;
    const auto& clock = p.loads[i]->clock();
    opens.push_back({clock.to_controller(result.window_open_ns()), clock.uncertainty_ns()});
    r.mutable_load_parts(static_cast<int>(i))->set_window_open_ms((opens.back().at_ns - p.start_ns) / 1e6);
  }
  if (p.server.opened_ns() != 0) {
    opens.push_back(
        {p.target.clock().to_controller(p.server.opened_ns()), p.target.clock().uncertainty_ns()});
    r.set_target_window_open_ms((opens.back().at_ns - p.start_ns) / 1e6);
  }
  if (opens.empty()) return;
  auto [first, last] = std::minmax_element(opens.begin(), opens.end(),
                                           [](const Open& a, const Open& b) { return a.at_ns < b.at_ns; });
  r.set_window_skew_ms((last->at_ns - first->at_ns) / 1e6);
  // Any part could really be the earliest or the latest: the skew is off by at most the two
  // largest uncertainties.
  std::vector<int64_t> u;
  for (const auto& o : opens) u.push_back(o.uncertainty_ns);
  std::sort(u.rbegin(), u.rend());
  r.set_window_skew_uncertainty_ms((u[0] + (u.size() > 1 ? u[1] : 0)) / 1e6);
  const double bound_ms = p.scenario.execution.max_skew_ms.value_or(p.window_ns / 1e6 / 100);
  if (r.window_skew_ms() > bound_ms) r.add_flags(flag_text(QualityFlag::kWindowSkew));
}

// The load agents' measured progress, interval by interval (as many as every agent sent).
void add_intervals(const RepetitionParts& p, v1::Repetition& r) {
  size_t n = SIZE_MAX;
  for (auto& load : p.loads) n = std::min(n, load->measured_progress().size());
  for (size_t i = 0; i < n && n != SIZE_MAX; ++i) {
    auto* iv = r.add_intervals();
    iv->set_t_s(p.loads[0]->measured_progress()[i].elapsed_s());
    for (auto& load : p.loads) {
      const auto& p = load->measured_progress()[i];
      iv->set_qps(iv->qps() + p.qps());
      iv->set_requests(iv->requests() + p.requests());
      iv->set_errors(iv->errors() + p.errors());
    }
  }
}

// An agent older than LoadSpec.pace_granularity_us drops it and paces each slot at its time:
// its figures would be recorded as the granular cell's.
void check_paced_as_asked(const Cell& cell, const LoadSession& load) {
  const double asked = cell.rate > 0 ? cell.pace_granularity_us : 0;
  if (load.result().pace_granularity_us() != asked)
    throw CellError("measure",
                    fmt::format("load agent {} paced with a granularity of {:g} µs, not the {:g} µs "
                                "asked (an agent older than pace_granularity_us paces each slot "
                                "at its time)",
                                load.agent().name, load.result().pace_granularity_us(), asked));
}

// How long the windows' usage may take once the last result is in: a profiled window's
// profile is folded first.
double usage_limit_s(const RepetitionOptions& o, const Cell& c) {
  return o.limits.stop_s + (c.profile ? limits::kProfileAllowanceS : 0);
}

v1::Repetition merged(const RepetitionParts& p) {
  for (auto& load : p.loads) check_paced_as_asked(p.cell, *load);
  std::vector<v1::LoadResult> parts;
  for (auto& load : p.loads) parts.push_back(load->result());
  v1::Repetition r = merge_load_results(parts);
  *r.mutable_server() = p.server;
  r.set_target_startup_ms(p.target.startup_ms());
  r.set_target_build(p.target.build());
  r.set_target_commit(p.target.commit());
  r.set_target_agent(p.target.agent_name());
  add_intervals(p, r);
  for (size_t i = 0; i < p.loads.size(); ++i) {
    *r.add_load_parts() = p.loads[i]->part();
    if (i == 0)
      *r.mutable_client() = p.loads[i]->usage();
    else
      add_usage(*r.mutable_client(), p.loads[i]->usage());
  }
  if (p.scheduled) add_skew(p, r);
  if (p.cell.instructions == InstructionsMethod::kCounters) add_counted_instructions(p, r);
  return r;
}

// Each load agent's spec of its share of the cell, on its CPUs.
std::vector<v1::LoadSpec> load_specs(const Scenario& s, const Cell& cell, const Placement& placement,
                                     const std::vector<LoadShare>& shares, const std::string& endpoint) {
  std::vector<v1::LoadSpec> specs;
  uint32_t first_thread = 0, cell_threads = 0;
  for (const auto& share : shares) cell_threads += share.threads;
  for (size_t i = 0; i < shares.size(); ++i) {
    specs.push_back(load_spec(s, cell, shares[i], endpoint));
    specs.back().set_cpus(i < placement.load_cpus.size() ? placement.load_cpus[i] : "");
    // An open loop over several agents: one pace for the cell (LoadSpec.cell_threads).
    if (shares.size() > 1 && specs.back().rate() > 0) {
      specs.back().set_first_thread(first_thread);
      specs.back().set_cell_threads(cell_threads);
    }
    first_thread += shares[i].threads;
  }
  return specs;
}

// Every agent can start at an instant, and every load is the built-in worker's for a duration,
// paced slot by slot (a pacing granularity would send slots of the window early, before it).
bool can_schedule(const Placement& placement, const std::vector<v1::LoadSpec>& specs) {
  return !specs.empty() && placement.target.scheduled_start &&
         std::all_of(placement.loads.begin(), placement.loads.end(),
                     [](const AgentRef& a) { return a.scheduled_start; }) &&
         std::all_of(specs.begin(), specs.end(), [](const v1::LoadSpec& s) {
           return s.stop_case() == v1::LoadSpec::kDurationS &&
                  (s.client().empty() || s.client() == "loadlab") && s.pace_granularity_us() == 0;
         });
}

// The load agents' live figures together: their requests, errors and rates summed, the mean
// latency weighted by rate.
LiveProgress live_progress(const std::vector<std::unique_ptr<LoadSession>>& loads) {
  LiveProgress live;
  for (auto& load : loads) {
    const auto& p = load->progress();
    live.elapsed_s = std::max(live.elapsed_s, p.elapsed_s());
    live.requests += p.requests();
    live.errors += p.errors();
    live.qps += p.qps();
    live.warmup = live.warmup || p.warmup();
    live.latency_mean_ms += p.latency_mean_ms() * p.qps();
  }
  live.latency_mean_ms = live.qps > 0 ? live.latency_mean_ms / live.qps : 0;
  return live;
}

// The slowest round trip of every clock now: each clock's latest or its least, the larger.
int64_t slowest_round_trip(const ClockOffset& target,
                           const std::vector<std::unique_ptr<LoadSession>>& loads) {
  auto round_trip = [](const ClockOffset& c) { return std::max(c.round_trip_ns(), c.last_round_trip_ns()); };
  int64_t slowest = round_trip(target);
  for (auto& load : loads) slowest = std::max(slowest, round_trip(load->clock()));
  return slowest;
}

constexpr size_t kClockSamples = 4;              // clock probes of each stream before a scheduled start
constexpr uint32_t kCallgrindStartMs = 120'000;  // valgrind's start-up is slow
constexpr std::chrono::nanoseconds kStartMargin = 100ms;  // the least a scheduled start is ahead

// The least round trip of every clock, the largest of them.
int64_t least_round_trip(const ClockOffset& target, const std::vector<std::unique_ptr<LoadSession>>& loads) {
  int64_t best = target.round_trip_ns();
  for (auto& load : loads) best = std::max(best, load->clock().round_trip_ns());
  return best;
}

// The measure phase's deadline: the limit set, else a search step's window or the load's
// duration with a minute to spare, else a day (a load stopped by its request count).
double measure_limit_s(const RepetitionOptions& o, const Scenario& s, const Cell& cell) {
  // A scheduled start's measure phase lasts until the usage, after a profile is folded.
  const double profile = cell.profile ? limits::kProfileAllowanceS : 0;
  if (o.limits.measure_s > 0) return o.limits.measure_s + profile;
  if (cell.window_s) return *cell.window_s + 60;  // a search step
  return s.load.duration_s ? *s.load.duration_s + 60 + profile : 24 * 3600.0;
}

// After the target's stream closed: its Exited event, which the reader queued before the
// stream's end.
void take_exited(StreamEvents& events, const std::string& agent, v1::Exited& into) {
  while (auto m = events.pop_until(std::chrono::steady_clock::now())) {
    if (m->source == StreamMessage::kTarget && !m->end && m->target_event.has_exited()) {
      into = m->target_event.exited();
      return;
    }
  }
  into.set_instructions_unavailable("target agent " + agent + " sent no exit of the target");
}

// The repetition's thread runs it: it starts the streams, then takes their events one at
// a time from one queue, so that the marks and deadlines follow the order they happened in.
class RepetitionRunner {
 public:
  RepetitionRunner(const Placement& p, const Scenario& s, const Cell& c, const RepetitionOptions& o)
      : placement_(p),
        scenario_(s),
        cell_(c),
        options_(o),
        watchdog_(o.stop, *o.clock, o.cancel),
        target_(p.target, watchdog_) {}

  v1::Repetition run() {
    watchdog_.arm("ready", options_.limits.ready_s);
    auto spec = target_spec(scenario_, cell_);
    spec.set_cpus(placement_.target_cpus);
    if (options_.callgrind_exited) {
      spec.set_instructions(v1::INSTRUCTIONS_CALLGRIND);
      spec.set_start_timeout_ms(kCallgrindStartMs);
    }
    target_.start(spec, options_.limits.ready_s);  // on failure nothing else has started
    try {
      start_loads();
      await_window();
      for (auto& load : loads_) load->join();
      v1::Repetition r =
          merged({scenario_, cell_, target_, loads_, *server_, scheduled_, start_ns_, window_ns_});
      stop_target();
      if (options_.callgrind_exited) take_exited(events_, target_.agent_name(), *options_.callgrind_exited);
      return r;
    } catch (...) {
      tear_down();  // never unwind past running reader threads
      throw;
    }
  }

 private:
  // Every load agent's share starts; the target's events are read from now on too. A load
  // measured for a duration by the built-in worker waits, warmed up, for a scheduled start.
  void start_loads() {
    target_.read_into(events_);
    watchdog_.arm("warmup", scenario_.load.warmup_s + options_.limits.warmup_extra_s);
    auto shares = split_load(scenario_, cell_, placement_.loads.size());
    std::vector<v1::LoadSpec> specs = load_specs(scenario_, cell_, placement_, shares, target_.endpoint());
    scheduled_ = can_schedule(placement_, specs);
    if (scheduled_) window_ns_ = static_cast<int64_t>(specs.front().duration_s() * 1e9);
    for (size_t i = 0; i < shares.size(); ++i) {
      specs[i].set_scheduled_start(scheduled_);
      loads_.push_back(std::make_unique<LoadSession>(i, placement_.loads[i], shares[i], watchdog_));
      loads_.back()->start(specs[i], events_);
    }
    if (scheduled_) send_probes();
  }

  // Until every load stream has ended and the target has reported the window's usage.
  void await_window() {
    while (ended_ < loads_.size() || !server_) {
      std::optional<StreamMessage> m;
      if (scheduled_ && start_ns_ == 0) {
        // Probing every clock until the start is sent.
        if (!(m = events_.pop_until(next_probe_))) {
          send_probes();
          continue;
        }
      } else {
        m = events_.pop();
      }
      if (m->source == StreamMessage::kTarget)
        on_target(*m);
      else if (m->end)
        on_load_end(*loads_[m->source], m->status);
      else
        on_load_event(*loads_[m->source], m->load_event, m->read_ns);
    }
  }

  // A clock probe on every stream: every 50 ms until each clock has kClockSamples, then every
  // 250 ms (they are the load streams' heartbeats until the start).
  void send_probes() {
    bool enough = target_.clock().samples() >= kClockSamples;
    for (auto& load : loads_) {
      if (!load->ended()) load->probe();  // a stream that is gone says why when it ends
      enough = enough && load->clock().samples() >= kClockSamples;
    }
    target_.probe();
    next_probe_ = std::chrono::steady_clock::now() + (enough ? 250ms : 50ms);
  }

  // Once every load agent is ready and every clock known: one instant for every window, a
  // margin ahead of now (twice the slowest round trip, at least kStartMargin), in each
  // agent's clock. The target's window opens then too, and closes a window later. The round
  // trips are each clock's latest, what a message takes now: beside 50 load workers warming
  // up on 2 cores they were 8-123 ms, their least 5-17 ms, and a margin from the least
  // opened some workers' windows up to 305 ms after the instant.
  void start_when_ready() {
    if (!scheduled_ || start_ns_ != 0 || !target_.clock().known()) return;
    for (auto& load : loads_)
      if (!load->ready() || !load->clock().known()) return;
    const int64_t slowest = slowest_round_trip(target_.clock(), loads_);
    const int64_t margin = std::max<int64_t>(kStartMargin.count(), 2 * slowest);
    start_ns_ = controller_now_ns() + margin;
    component_logger("controller")
        ->debug("{}: windows open in {:.1f} ms (the slowest round trip now {:.1f} ms, at best {:.1f})",
                cell_.key(), margin / 1e6, slowest / 1e6, least_round_trip(target_.clock(), loads_) / 1e6);
    // The target's marks first: one stream, while 50 load agents' writes took 200-300 ms on a
    // busy 2-core machine, and the target's window then opened that late.
    target_.mark(v1::Mark::RESET, cell_.key(), "measure", start_ns_);
    target_.mark(v1::Mark::FINAL, cell_.key(), "usage", start_ns_ + window_ns_);
    for (auto& load : loads_) load->start_at(start_ns_);  // a stream that is gone says why when it ends
    measuring_ = loads_.size();
    watchdog_.arm("measure", measure_limit_s(options_, scenario_, cell_) + margin / 1e9);
  }

  void on_target(const StreamMessage& m) {
    if (m.end)
      throw watchdog_.error(window_phase(),
                            "target agent " + target_.agent_name() + " lost: the stream ended");
    if (m.target_event.has_clock_echo()) {
      target_.record(m.target_event.clock_echo(), m.read_ns);
      start_when_ready();
    } else if (m.target_event.has_usage()) {
      server_ = m.target_event.usage();
    } else if (m.target_event.has_exited()) {
      // The target died under load: the cell cannot be measured any more.
      const auto& e = m.target_event.exited();
      throw CellError(window_phase(), "target exited (" + exit_text(e) + "): " + e.output_tail());
    }
  }

  void on_load_event(LoadSession& load, const v1::LoadEvent& ev, int64_t read_ns) {
    load.record(ev, read_ns);
    if (ev.has_progress()) {
      report_progress();
    } else if (ev.has_ready() || ev.has_clock_echo()) {
      start_when_ready();
    } else if (scheduled_) {
      // The target's marks went with the start.
    } else if (ev.has_measure_start()) {
      // The server's window opens with the first load agent's and closes with the last.
      if (measuring_++ == 0) {
        target_.mark(v1::Mark::RESET, cell_.key(), "measure");
        watchdog_.arm("measure", measure_limit_s(options_, scenario_, cell_));
      }
    } else if (ev.has_result()) {
      if (++results_ == loads_.size()) {
        watchdog_.arm("usage", usage_limit_s(options_, cell_));
        target_.mark(v1::Mark::FINAL, cell_.key(), "usage");  // answered through the target reader
      }
    }
  }

  void on_load_end(LoadSession& load, const grpc::Status& status) {
    ++ended_;
    load.set_ended();
    if (!status.ok())
      throw watchdog_.error("measure", "load agent " + load.agent().name + ": " + status_text(status),
                            status.error_code());
    if (!load.complete())
      throw CellError("measure", "load agent " + load.agent().name + " ended without a result and its usage");
  }

  void report_progress() const {
    if (options_.progress) options_.progress(live_progress(loads_));
  }

  void stop_target() {
    watchdog_.arm("stop", options_.limits.stop_s);
    auto status = target_.close();
    if (!status.ok())
      component_logger("controller")
          ->warn("cell {}: target stream ended with: {}", cell_.key(), status_text(status));
  }

  // A failed repetition: every call is cancelled, then its reader joined.
  void tear_down() {
    watchdog_.cancel_all();
    for (auto& load : loads_) load->join();
    target_.abandon();
  }

  std::string window_phase() const { return measuring_ ? "measure" : "warmup"; }
  const Placement& placement_;
  const Scenario& scenario_;
  const Cell& cell_;
  const RepetitionOptions& options_;
  // Members in this order: the watchdog outlives the calls it cancels, the queue the
  // threads that push to it.
  Watchdog watchdog_;
  StreamEvents events_;
  TargetSession target_;
  std::vector<std::unique_ptr<LoadSession>> loads_;
  // A scheduled start: the load agents wait, warmed up, for one instant (start_ns_, in the
  // controller's clock; 0 until sent) at which every window opens, window_ns_ long.
  bool scheduled_ = false;
  int64_t start_ns_ = 0;
  int64_t window_ns_ = 0;
  std::chrono::steady_clock::time_point next_probe_;
  size_t measuring_ = 0;             // load agents whose window has started
  size_t results_ = 0;               // load agents that sent their result
  size_t ended_ = 0;                 // load streams that ended
  std::optional<v1::Usage> server_;  // the target's usage over the window
};

}  // namespace

v1::Repetition run_repetition(const Placement& placement, const Scenario& s, const Cell& c,
                              const RepetitionOptions& options) {
  return RepetitionRunner(placement, s, c, options).run();
}

}  // namespace loadlab::controller
