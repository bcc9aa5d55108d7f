#include "capacity/capacity_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "loadlab/shared/cpu_list.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/limits.hpp"
#include "results/quality_flags.hpp"

namespace loadlab::controller {

namespace {

uint32_t stalls_of_load(const v1::Repetition& rep) {
  uint32_t n = 0;
  for (const auto& p : rep.load_parts()) n += p.client().stalls();
  return n;
}

double longest_stall_ms(const v1::Repetition& rep) {
  double longest = rep.server().stall_max_ms();
  for (const auto& p : rep.load_parts()) longest = std::max(longest, p.client().stall_max_ms());
  return longest;
}

// A verdict without the busy-machine check: a step still disturbed after its retries is
// judged by what it measured, and says so.
StepVerdict judge_one(const SearchDef& def, const StepPlan& plan, const v1::Repetition* rep,
                      const std::string& error, bool busy_counts, std::string* why,
                      std::vector<std::pair<std::string, std::optional<double>>>* figures) {
  why->clear();
  figures->clear();
  if (!error.empty() || !rep) {
    *why = error.empty() ? "not measured" : error;
    return StepVerdict::kFailed;
  }
  if (busy_counts && busy_machine(*rep)) {
    *why = "other work ran on its CPUs (busy-machine)";
    return StepVerdict::kDisturbed;
  }
  std::vector<std::string> broken;
  for (const auto& o : def.slo) {
    const auto v = slo_value(*rep, o.figure);
    figures->emplace_back(o.figure, v);
    if (!v)
      broken.push_back(o.figure + " unknown (no request measured)");
    else if (*v > o.limit)
      broken.push_back(fmt::format("{} {:g} > {:g}", o.figure, *v, o.limit));
  }
  const bool saturated = has_flag(*rep, QualityFlag::kClientSaturated);
  if (busy_counts && (rep->rate_not_held() || !broken.empty()) && stalled(*rep)) {
    // A stop of the CPUs queues every request that comes meanwhile: a tail broken then may be
    // the machine's. A step that held the SLO through a stall passes.
    *why = fmt::format("{} while the machine's CPUs stopped {} times, {:.0f} ms at the longest (stalled)",
                       broken.empty() ? "the rate was not held" : broken.front(),
                       rep->server().stalls() + stalls_of_load(*rep), longest_stall_ms(*rep));
    return StepVerdict::kDisturbed;
  }
  if (rep->rate_not_held() || !broken.empty()) {
    if (saturated) {
      *why = fmt::format("the client was saturated ({:.0f} % CPU) and {}", rep->client().cpu_pct(),
                         rep->rate_not_held() ? fmt::format("held {} of {}", rate_text(rep->achieved_rate()),
                                                            rate_text(plan.rate))
                                              : broken.front());
      return StepVerdict::kClientBound;
    }
    std::string w;
    for (const auto& b : broken) w += (w.empty() ? "" : ", ") + b;
    if (rep->rate_not_held())
      w += std::string(w.empty() ? "" : ", ") + "rate not held: achieved " + rate_text(rep->achieved_rate()) +
           " of " + rate_text(plan.rate);
    if (plan.connection_bound)
      w += fmt::format(" (connection-bound: {} connections × {} streams, fewer than rate × latency bound)",
                       plan.connections, plan.streams);
    *why = w;
    return StepVerdict::kFail;
  }
  return StepVerdict::kPass;
}

}  // namespace

namespace {

std::optional<double> latency_figure(const v1::Latency& l, const std::string& figure) {
  if (figure == "p50_ms") return l.p50_us() / 1000.0;
  if (figure == "p90_ms") return l.p90_us() / 1000.0;
  if (figure == "p99_ms") return l.p99_us() / 1000.0;
  if (figure == "p999_ms") return l.p999_us() / 1000.0;
  if (figure == "max_ms") return l.max_us() / 1000.0;
  return std::nullopt;
}

// Every objective held by the figures counted from each request's write: what the server
// (and the network) took, without the wait in the client for a free connection.
bool held_from_the_write(const SearchDef& def, const v1::Repetition& rep) {
  if (!(rep.latency_uncorrected().max_us() > 0)) return false;  // not measured (an external client)
  return std::all_of(def.slo.begin(), def.slo.end(), [&](const SloObjective& o) {
    const auto v = o.figure == "errors_pct" ? slo_value(rep, o.figure)
                                            : latency_figure(rep.latency_uncorrected(), o.figure);
    return v && *v <= o.limit;
  });
}

// The server could not answer faster: the rate not held while its processes used 90 % or
// more of the CPUs they were allowed (the machine's when not pinned). More connections would
// only queue more requests in it, and add their own cost.
bool server_at_its_cpus(const v1::Repetition& rep) {
  if (!rep.rate_not_held()) return false;
  const auto allowed = CpuList::parse(rep.server().cpus());
  const uint32_t n = allowed ? allowed->size() : rep.server().machine_cores();
  return n > 0 && rep.server().cpu_pct() >= 0.9 * 100.0 * n;
}

}  // namespace

std::optional<double> slo_value(const v1::Repetition& rep, const std::string& figure) {
  if (rep.requests() == 0) return std::nullopt;
  if (figure == "errors_pct")
    return 100.0 * static_cast<double>(rep.errors()) / static_cast<double>(rep.requests());
  return latency_figure(rep.latency(), figure);
}

double latency_bound_s(const SearchDef& def, double timeout_s) {
  double bound = 0;
  for (const auto& o : def.slo)
    if (o.figure != "errors_pct") bound = std::max(bound, o.limit / 1000.0);
  return bound > 0 ? bound : timeout_s;
}

const char* kind_name(StepPlan::Kind k) {
  switch (k) {
    case StepPlan::Kind::kRamp:
      return "ramp";
    case StepPlan::Kind::kBisect:
      return "bisect";
    case StepPlan::Kind::kValidate:
      return "validate";
  }
  return "";
}

const char* verdict_name(StepVerdict v) {
  switch (v) {
    case StepVerdict::kPass:
      return "pass";
    case StepVerdict::kFail:
      return "fail";
    case StepVerdict::kClientBound:
      return "client-bound";
    case StepVerdict::kDisturbed:
      return "disturbed";
    case StepVerdict::kConnectionShort:
      return "connection-short";
    case StepVerdict::kFailed:
      return "failed";
  }
  return "";
}

const char* end_name(CapacitySearch::End e) {
  switch (e) {
    case CapacitySearch::End::kSearching:
      return "searching";
    case CapacitySearch::End::kFound:
      return "found";
    case CapacitySearch::End::kAtMax:
      return "at-max";
    case CapacitySearch::End::kBrokenAtMin:
      return "broken-at-min";
    case CapacitySearch::End::kClientBound:
      return "client-bound";
    case CapacitySearch::End::kConnectionBound:
      return "connection-bound";
    case CapacitySearch::End::kUnvalidated:
      return "unvalidated";
    case CapacitySearch::End::kFailed:
      return "failed";
  }
  return "";
}

StepVerdict judge_step(const SearchDef& def, const StepPlan& plan, const v1::Repetition* rep,
                       const std::string& error, std::string* why,
                       std::vector<std::pair<std::string, std::optional<double>>>* figures) {
  return judge_one(def, plan, rep, error, true, why, figures);
}

CapacitySearch::CapacitySearch(SearchDef def, SearchLoad load)
    : def_(std::move(def)), load_(load), threads_(std::max<uint32_t>(load.threads, 1)) {
  pending_ = plan(StepPlan::Kind::kRamp, def_.rate_min);
}

size_t CapacitySearch::max_steps(const SearchDef& def) {
  const auto ramp = static_cast<size_t>(std::ceil(std::log2(def.rate_max / def.rate_min) - 1e-12));
  const auto bisect = static_cast<size_t>(std::ceil(std::log2(100.0 / def.precision_pct) - 1e-12));
  return ramp + bisect + kMaxValidations;
}

size_t CapacitySearch::counted_steps() const {
  return static_cast<size_t>(std::count_if(steps_.begin(), steps_.end(), [](auto& s) { return s.counted; }));
}

std::optional<StepPlan> CapacitySearch::next() const {
  return end_ == End::kSearching ? pending_ : std::nullopt;
}

double connections_for(double in_flight) { return std::ceil(in_flight + 3 * std::sqrt(in_flight)); }

StepPlan CapacitySearch::plan(StepPlan::Kind kind, double rate, bool full) const {
  StepPlan p;
  p.kind = kind;
  p.rate = rate;
  const double window = kind == StepPlan::Kind::kValidate ? def_.validate_s : def_.step_s;
  // The step's warm-up and window together are one load's run (limits::kMaxLoadRunS; the
  // scenario checker holds step_s and validate_s to it, min_requests at a low rate is cut).
  p.duration_s = std::min(limits::kMaxLoadRunS - load_.warmup_s,
                          std::max(window, static_cast<double>(def_.min_requests) / rate));
  p.threads = threads_;
  // In flight at the latency bound (Little's law): what the step needs to carry its rate
  // without the client's connections being the limit, even with the server's latency at the
  // objective. Opened at every rate, that many idle connections are a load of their own on a
  // server (a looser objective would open more and find less), so a step opens what the
  // latency last measured needs, twice over, and a step short of them is measured again with
  // the bound's (record()).
  const double bound = latency_bound_s(def_, load_.timeout_s);
  const double needed = std::ceil(rate * bound);
  p.full = full || !measured_latency_s_ || 2 * *measured_latency_s_ >= bound;
  const double wanted = p.full ? needed : std::min(needed, connections_for(rate * 2 * *measured_latency_s_));
  const uint64_t cap = def_.max_connections
                           ? def_.max_connections
                           : std::min<uint64_t>(limits::kMaxConnections,
                                                uint64_t{p.threads} * limits::kMaxConnectionsPerThread);
  const uint64_t least = std::max<uint64_t>(load_.connections, p.threads);
  if (load_.multiplexed) {
    // Streams first (they cost no socket), then connections.
    const uint64_t connections = std::clamp<uint64_t>(
        static_cast<uint64_t>(std::ceil(wanted / limits::kMaxStreams)), least, std::max(cap, least));
    p.connections = static_cast<uint32_t>(connections);
    p.streams = static_cast<uint32_t>(std::clamp<uint64_t>(
        static_cast<uint64_t>(std::ceil(wanted / static_cast<double>(connections))), 1, limits::kMaxStreams));
    const uint64_t most = std::max(cap, least) * limits::kMaxStreams;
    p.connection_bound = static_cast<double>(most) < needed;
  } else {
    const uint64_t connections =
        std::clamp<uint64_t>(static_cast<uint64_t>(wanted), least, std::max(cap, least));
    p.connections = static_cast<uint32_t>(connections);
    p.connection_bound = static_cast<double>(std::max(cap, least)) < needed;
  }
  // Nothing more to open: the step is as full as the limits let it be.
  p.full = p.full || static_cast<double>(p.connections) * p.streams >= needed || p.connection_bound;
  return p;
}

void CapacitySearch::record(const v1::Repetition* rep, const std::string& error) {
  if (end_ != End::kSearching || !pending_) return;
  SearchStep s;
  s.plan = *pending_;
  if (rep) s.achieved_rate = rep->achieved_rate();
  s.verdict = judge_one(def_, s.plan, rep, error, true, &s.why, &s.figures);
  if (s.verdict == StepVerdict::kDisturbed) {
    if (retries_ < kDisturbedRetries) {
      ++retries_;
      s.counted = false;
      steps_.push_back(std::move(s));
      return;  // the same step again
    }
    // Still disturbed: judged by what it measured, and it says so.
    std::string busy_why = s.why;
    s.verdict = judge_one(def_, s.plan, rep, error, false, &s.why, &s.figures);
    s.why = (s.why.empty() ? "" : s.why + "; ") + busy_why + " each of " +
            std::to_string(kDisturbedRetries + 1) + " times";
  }
  retries_ = 0;
  const bool waited_in_client =
      s.verdict == StepVerdict::kFail && !s.plan.full && held_from_the_write(def_, *rep);
  if (waited_in_client && server_at_its_cpus(*rep))
    s.why += fmt::format(" (the server at {:.0f} % CPU of its {}: overloaded, not short of connections)",
                         rep->server().cpu_pct(),
                         rep->server().cpus().empty() ? "machine" : "CPUs " + rep->server().cpus());
  if (waited_in_client && !server_at_its_cpus(*rep)) {
    // The requests waited in the client for a connection: the step is measured again with
    // every connection the bound allows.
    s.verdict = StepVerdict::kConnectionShort;
    s.why = fmt::format(
        "{} (the figures from each request's write held the SLO: requests waited for one of "
        "{} connections, sized for the latency last measured)",
        s.why, s.plan.connections);
    s.counted = false;
    const double rate = s.plan.rate;
    const auto kind = s.plan.kind;
    steps_.push_back(std::move(s));
    pending_ = plan(kind, rate, true);
    return;
  }
  if (s.verdict == StepVerdict::kPass) {
    const double from_write_us = rep->latency_uncorrected().p99_us();
    measured_latency_s_ = (from_write_us > 0 ? from_write_us : rep->latency().p99_us()) / 1e6;
  }
  if (s.verdict == StepVerdict::kClientBound && threads_ < def_.max_threads) {
    s.counted = false;
    const double rate = s.plan.rate;
    const auto kind = s.plan.kind;
    steps_.push_back(std::move(s));
    threads_ = std::min(def_.max_threads, threads_ * 2);
    pending_ = plan(kind, rate);  // the same rate with more load threads
    return;
  }
  const StepPlan p = s.plan;
  const StepVerdict v = s.verdict;
  const std::string why = s.why;
  steps_.push_back(std::move(s));
  conclude(p, v, why);
}

void CapacitySearch::conclude(const StepPlan& p, StepVerdict v, const std::string& why) {
  switch (v) {
    case StepVerdict::kFailed:
      return finish(End::kFailed, lo_.value_or(0), "the step at " + rate_text(p.rate) + " failed: " + why);
    case StepVerdict::kClientBound:
      return finish(End::kClientBound, lo_.value_or(0),
                    "client-bound at " + rate_text(p.rate) + " with " + std::to_string(p.threads) +
                        " load threads (search.max_threads " + std::to_string(def_.max_threads) +
                        "): " + why);
    case StepVerdict::kPass:
      return pass(p.rate);
    case StepVerdict::kFail:
    case StepVerdict::kDisturbed:
    case StepVerdict::kConnectionShort:
      return fail(p.rate);
  }
}

void CapacitySearch::pass(double rate) {
  switch (pending_->kind) {
    case StepPlan::Kind::kRamp:
      lo_ = rate;
      if (rate >= def_.rate_max) {
        pending_ = plan(StepPlan::Kind::kValidate, rate);
        return;
      }
      pending_ = plan(StepPlan::Kind::kRamp, std::min(2 * rate, def_.rate_max));
      return;
    case StepPlan::Kind::kBisect:
      lo_ = rate;
      return bisect_or_validate();
    case StepPlan::Kind::kValidate:
      ++validations_;
      if (!hi_ && rate >= def_.rate_max)
        return finish(
            End::kAtMax, rate,
            "the SLO held up to rate.max " + rate_text(rate) + " (validated): the capacity is beyond it");
      if (hi_ && hi_connection_bound_)
        return finish(
            End::kConnectionBound, rate,
            fmt::format("{} holds the SLO (validated for {:g} s), but {} failed with fewer connections "
                        "than rate × latency bound: the client's connections may be the limit "
                        "(search.max_connections)",
                        rate_text(rate), pending_->duration_s, rate_text(*hi_)));
      return finish(
          End::kFound, rate,
          fmt::format("{} holds the SLO (validated for {:g} s)", rate_text(rate), pending_->duration_s));
  }
}

void CapacitySearch::fail(double rate) {
  switch (pending_->kind) {
    case StepPlan::Kind::kRamp:
      if (!lo_) return finish(End::kBrokenAtMin, 0, "the SLO broke at rate.min " + rate_text(rate));
      hi_ = rate;
      hi_connection_bound_ = pending_->connection_bound;
      return bisect_or_validate();
    case StepPlan::Kind::kBisect:
      hi_ = rate;
      hi_connection_bound_ = pending_->connection_bound;
      return bisect_or_validate();
    case StepPlan::Kind::kValidate: {
      ++validations_;
      hi_ = rate;
      hi_connection_bound_ = pending_->connection_bound;
      const double lower = rate * (1 - def_.precision_pct / 100);
      // Never beyond the step bound: a ramp that had to test rate.max (max / min a power of
      // two) and a full bisection leave three validations, not four.
      if (validations_ >= kMaxValidations || counted_steps() >= max_steps(def_) || lower < def_.rate_min)
        return finish(
            End::kUnvalidated, *lo_,
            fmt::format("not validated: {} held for {:g} s steps, but {} validations down to {} failed",
                        rate_text(*lo_), def_.step_s, validations_, rate_text(rate)));
      pending_ = plan(StepPlan::Kind::kValidate, lower);
      return;
    }
  }
}

void CapacitySearch::bisect_or_validate() {
  if ((*hi_ - *lo_) / *lo_ <= def_.precision_pct / 100) {
    pending_ = plan(StepPlan::Kind::kValidate, *lo_);
    return;
  }
  pending_ = plan(StepPlan::Kind::kBisect, (*lo_ + *hi_) / 2);
}

void CapacitySearch::finish(End end, double capacity, std::string reason) {
  end_ = end;
  capacity_ = capacity;
  reason_ = std::move(reason);
  pending_.reset();
}

}  // namespace loadlab::controller
