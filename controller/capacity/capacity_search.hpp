#pragma once
// Capacity under a latency objective: the search a cell with a scenario `search` block makes
// instead of one measurement (docs/capacity.md). The highest open-loop rate the cell holds
// within its objectives (SLO), found by an exponential ramp from `rate.min` until the SLO
// breaks, then bisection to `precision_pct`, then a validation run at the found rate (a
// validation that fails lowers the rate and validates again, at most 3 times).
//
// The search itself is a state machine of the steps' outcomes, without agents: next() says
// what to measure, record() takes what a step measured. Its cost is bounded: at most
// ceil(log2(max / min)) + ceil(log2(100 / precision)) + 4 judged steps, validations included
// (max_steps(); a validation that would pass the bound is not made, and the capacity is then
// unvalidated); a step the busy-machine check flags, or one that found the client the limit
// while more load threads were allowed, is measured again and counted apart.
//
// It knows what it cannot measure: a fixed set of HTTP/1.1 connections caps the rate at
// connections ÷ latency. Each step opens the connections (or h2/h3 streams) the requests in
// flight need at the latency last measured (twice the last step's p99 from the write, with a
// Poisson margin; the SLO's latency bound for the first step), never more than rate × the
// bound; a step that broke a latency objective only because requests waited in the client
// for a connection (the figures from the write within the SLO, and not a server at its CPUs
// that could not hold the rate) is measured again with rate × bound connections
// (`connection-short`). A step that cannot have rate × bound within
// the limits is flagged `connection-bound`; a step whose load could not hold the rate while
// the client was saturated says nothing about the server (`client-bound`).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/v1/result.pb.h"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

// The figure's value in a repetition; none when it has none (no request measured).
std::optional<double> slo_value(const v1::Repetition& rep, const std::string& figure);

// The largest latency limit of the SLO in seconds; `timeout_s` when it has none (a request
// slower than the timeout fails, so the error rate bounds it).
double latency_bound_s(const SearchDef& def, double timeout_s);

// The connections (or streams) a step opens for `in_flight` requests expected in flight:
// that many plus three standard deviations of a Poisson count (arrivals over a latency).
double connections_for(double in_flight);

// What the search asks a step to be.
struct StepPlan {
  enum class Kind { kRamp, kBisect, kValidate };
  Kind kind = Kind::kRamp;
  double rate = 0;        // requests per second over the cell
  double duration_s = 0;  // the measured window
  uint32_t threads = 1;   // load threads over the cell
  uint32_t connections = 1;
  uint32_t streams = 1;           // h2/h3: per connection
  bool connection_bound = false;  // fewer connections (or streams) than rate × latency bound
  // Sized for rate × the SLO's latency bound (the most a step opens), not for the latency
  // last measured: the first step, and a step measured again after a `connection-short`.
  bool full = false;
};
const char* kind_name(StepPlan::Kind k);  // "ramp", "bisect", "validate"

// How a step's outcome is judged.
enum class StepVerdict {
  kPass,         // the rate held and every objective within its limit
  kFail,         // an objective broken (or the rate not held) with the client not the limit
  kClientBound,  // the load could not hold the rate and the client was saturated
  kDisturbed,    // other work ran on the step's CPUs (busy-machine): measured again
  // A latency objective broken only because requests waited in the client for one of the
  // connections sized from the latency last measured: measured again with rate × bound.
  kConnectionShort,
  kFailed,  // the step could not be measured (the cell's error)
};
// "pass", "fail", "client-bound", "disturbed", "connection-short", "failed".
const char* verdict_name(StepVerdict v);

// A step as measured and judged.
struct SearchStep {
  StepPlan plan;
  StepVerdict verdict = StepVerdict::kFailed;
  std::string why;  // the broken objective, or the flag, in words
  double achieved_rate = 0;
  std::vector<std::pair<std::string, std::optional<double>>> figures;  // each objective's figure
  // false: measured again (disturbed, connection-short, or client-bound with threads to add).
  bool counted = true;
};

// Judges a step's repetition against the SLO. `error`: the step's failure ("" if measured).
StepVerdict judge_step(const SearchDef& def, const StepPlan& plan, const v1::Repetition* rep,
                       const std::string& error, std::string* why,
                       std::vector<std::pair<std::string, std::optional<double>>>* figures);

// The cell's load as the search starts it: threads, connections, streams, and which
// protocol (h2/h3 carry several requests per connection), with the limits a step stays in.
struct SearchLoad {
  uint32_t threads = 1;
  uint32_t connections = 1;  // the scenario's: a step has at least these
  bool multiplexed = false;  // h2, h2c, h3: streams grow before connections do
  double timeout_s = 5;      // a request's timeout (the latency bound of an errors-only SLO)
  double warmup_s = 0;
};

class CapacitySearch {
 public:
  enum class End {
    kSearching,
    kFound,        // validated at `capacity`
    kAtMax,        // the SLO held up to rate.max (validated there): the capacity is beyond it
    kBrokenAtMin,  // the SLO broke at rate.min: no capacity within the objectives
    kClientBound,  // the load could not hold the rate with the threads allowed
    // Validated, but the lowest rate that failed had fewer connections (× streams) than
    // rate × latency bound: `capacity` is the client's connections' limit, a lower bound of
    // the server's.
    kConnectionBound,
    kUnvalidated,  // four validations failed: `capacity` is the last rate the steps held
    kFailed,       // a step could not be measured
  };

  CapacitySearch(SearchDef def, SearchLoad load);

  // The next step to measure; nullopt once the search has ended.
  std::optional<StepPlan> next() const;
  // What the step next() gave measured (its repetition, or its error).
  void record(const v1::Repetition* rep, const std::string& error);

  End end() const { return end_; }
  double capacity() const { return capacity_; }          // req/s; 0 when none was found
  const std::string& reason() const { return reason_; }  // the end in words
  const std::vector<SearchStep>& steps() const { return steps_; }
  size_t counted_steps() const;
  // ceil(log2(max / min)) + ceil(log2(100 / precision)) + 4.
  static size_t max_steps(const SearchDef& def);

  // Times a disturbed step is measured again before it is judged as it is.
  static constexpr int kDisturbedRetries = 2;
  static constexpr int kMaxValidations = 4;  // the first and three at lower rates

 private:
  StepPlan plan(StepPlan::Kind kind, double rate, bool full = false) const;
  // A counted step's verdict: the search goes on (pass, fail) or ends (failed, client-bound).
  void conclude(const StepPlan& p, StepVerdict v, const std::string& why);
  void pass(double rate);
  void fail(double rate);
  void bisect_or_validate();
  void finish(End end, double capacity, std::string reason);

  SearchDef def_;
  SearchLoad load_;
  std::optional<StepPlan> pending_;
  std::vector<SearchStep> steps_;
  std::optional<double> lo_, hi_;     // the highest rate that passed, the lowest that failed
  bool hi_connection_bound_ = false;  // the step at hi_ had too few connections
  uint32_t threads_;
  int validations_ = 0;
  int retries_ = 0;  // of the pending step (disturbed)
  // The latency the last measured step's requests took from their write (its p99, seconds);
  // unset before the first: connections are then sized for the SLO's bound.
  std::optional<double> measured_latency_s_;
  End end_ = End::kSearching;
  double capacity_ = 0;
  std::string reason_;
};

const char* end_name(CapacitySearch::End e);  // "found", "at-max", "broken-at-min", ...

}  // namespace loadlab::controller
