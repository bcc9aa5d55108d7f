#pragma once
// The agents' reports in the controller's result model: the load agents' results of one
// repetition merged (histogram buckets add, rates sum), and an agent's usage window.
#include <vector>

#include "loadlab/controller/results.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::controller {

// The merged result of several load agents' results. Throws CellError (phase "measure")
// when their histograms cannot be merged.
RepResult merge_load_results(const std::vector<v1::LoadResult>& results);

UsageResult usage_from_proto(const v1::Usage& u);

}  // namespace loadlab::controller
