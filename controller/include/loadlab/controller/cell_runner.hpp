#pragma once
// Runs one repetition of one cell: hosts the target on one agent, drives it from another
// (or the same) agent, and brackets the measured window with marks on the target stream.
#include <functional>
#include <stdexcept>
#include <string>

#include "loadlab/controller/plan.hpp"
#include "loadlab/controller/results.hpp"
#include "loadlab/controller/scenario.hpp"
#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::controller {

// A failed repetition; `phase` is one of start, ready, load, usage, stop.
class CellError : public std::runtime_error {
 public:
  CellError(std::string phase, const std::string& message)
      : std::runtime_error(phase + ": " + message), phase_(std::move(phase)) {}
  const std::string& phase() const { return phase_; }

 private:
  std::string phase_;
};

// Progress from the load worker (called on the calling thread).
using ProgressFn = std::function<void(const v1::Progress&)>;

v1::TargetSpec target_spec(const Scenario& s, const Cell& c);
v1::LoadSpec load_spec(const Scenario& s, const Cell& c, const std::string& endpoint);

// Throws CellError. Blocks until the repetition is over and the target has stopped.
RepResult run_repetition(v1::Agent::StubInterface& target_agent, v1::Agent::StubInterface& load_agent,
                         const Scenario& s, const Cell& c, const ProgressFn& progress);

}  // namespace loadlab::controller
