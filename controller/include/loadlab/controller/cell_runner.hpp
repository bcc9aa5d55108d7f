#pragma once
// Runs one repetition of one cell: hosts the target on one agent, drives it from one or
// more load agents at once, brackets the measured window with marks on the target stream,
// and merges the load agents' results (histogram buckets add, rates sum).
#include <atomic>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "loadlab/controller/plan.hpp"
#include "loadlab/controller/results.hpp"
#include "loadlab/controller/scenario.hpp"
#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::controller {

// A failed repetition; `phase` is one of start, ready, warmup, measure, usage, stop, or
// interrupted (the run is shutting down). `code` is the agent's gRPC status when one
// caused it (UNKNOWN otherwise), so that the retry loop can tell a lost agent from a
// request no agent will ever accept.
class CellError : public std::runtime_error {
 public:
  CellError(std::string phase, const std::string& message, grpc::StatusCode code = grpc::StatusCode::UNKNOWN)
      : std::runtime_error(phase + ": " + message), phase_(std::move(phase)), code_(code) {}
  const std::string& phase() const { return phase_; }
  grpc::StatusCode code() const { return code_; }

 private:
  std::string phase_;
  grpc::StatusCode code_;
};

struct AgentRef {
  std::string name;
  v1::Agent::StubInterface* stub = nullptr;
  uint32_t cores = 0;
};

struct Placement {
  AgentRef target;
  std::vector<AgentRef> loads;  // at least one
};

// Deadlines of the phases of a repetition, in seconds.
struct PhaseLimits {
  double ready_s = 30;         // target started and accepting
  double warmup_extra_s = 30;  // beyond the scenario's warmup_s
  double measure_s = 0;        // 0 = duration_s + 60 s, or 24 h for request counts
  double stop_s = 15;          // usage answered and target stopped
};

// One load agent's share of a cell.
struct LoadShare {
  uint32_t threads = 0, connections = 0;
  std::optional<uint64_t> total_requests;
};
// Splits the cell's threads over at most `agents` load agents (fewer if there are fewer
// threads), connections with them, and total_requests in proportion.
std::vector<LoadShare> split_load(const Scenario& s, const Cell& c, size_t agents);

// Progress from the load workers, summed (called on the calling thread).
struct LiveProgress {
  double elapsed_s = 0;
  uint64_t requests = 0, errors = 0;
  double qps = 0;
  bool warmup = false;
};
using ProgressFn = std::function<void(const LiveProgress&)>;

v1::TargetSpec target_spec(const Scenario& s, const Cell& c);
v1::LoadSpec load_spec(const Scenario& s, const Cell& c, const LoadShare& share, const std::string& endpoint);

// Throws CellError. Blocks until the repetition is over and the target has stopped. When
// `*stop` turns nonzero (SIGINT/SIGTERM) the calls are cancelled and it throws CellError
// with phase "interrupted" within about 100 ms.
RepResult run_repetition(const Placement& placement, const Scenario& s, const Cell& c,
                         const PhaseLimits& limits, const ProgressFn& progress,
                         const std::atomic<int>* stop = nullptr);

// The merged result of several load agents' results.
RepResult merge_load_results(const std::vector<v1::LoadResult>& results);

}  // namespace loadlab::controller
