#pragma once
// A cell's instructions per request under callgrind (the scenario's `instructions` with method
// "callgrind", docs/instructions.md): two probes of the cell's target, each a fresh target
// under callgrind answering LOW, then HIGH sequential requests on one connection from the
// built-in client at an even pace, and the difference of their instructions over the difference of their
// requests, so that start-up and shutdown cancel.
#include <optional>
#include <string>

#include "lab/placement.hpp"
#include "lab/repetition_runner.hpp"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

struct InstructionsProbe {
  std::optional<double> per_request;
  std::string unavailable;  // why there is no figure
  std::string profile;      // callgrind's output of the HIGH probe's busiest process
};

// On `placement`'s target agent, driven by its first load agent. Never throws for a probe
// that fails: the reason is the figure's `unavailable`.
InstructionsProbe probe_instructions(const Placement& placement, const Scenario& s, const Cell& c,
                                     const RepetitionOptions& options);

// Sets the repetition's instructions per request from a probe, and writes its profile into
// `profile_dir` (made when needed) as KEY.N.callgrind.out, named in Repetition.profile_file
// relative to the folder above it.
void record_probe(InstructionsProbe probe, const Cell& c, const std::string& profile_dir, v1::Repetition& r);

}  // namespace loadlab::controller
