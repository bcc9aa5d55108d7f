#pragma once
// Saturation guard: flags on a repetition whose figures measure the lab, not the target.
#include <map>
#include <string>
#include <vector>

#include "loadlab/controller/results.hpp"

namespace loadlab::controller {

// "client-saturated": a load agent's worker used ≥ 90 % of its CPUs (the set it was allowed
// on, Usage.cpus; else its machine's cores).
// "rate-not-held": open loop, a load agent began fewer than 99 % of the requests its
// schedule had due: the figures are at a lower rate than asked.
// "busy-machine:NAME": the CPUs the cell's processes on an agent's machine were allowed on
// (their Usage.cpus; the whole machine from an agent that does not say) spent ≥ 50 % of a
// core on work other than theirs during the window (a noisy neighbour).
// `cores` maps agent names to their core counts (from Describe).
std::vector<std::string> saturation_flags(const v1::Repetition& r,
                                          const std::map<std::string, uint32_t>& cores);

// The repetition carries a "busy-machine:" flag (any agent's).
bool busy_machine(const v1::Repetition& r);

}  // namespace loadlab::controller
