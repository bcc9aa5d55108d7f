#pragma once
// The load agents' results of one repetition merged into its figures (histogram buckets
// add, rates sum); the caller adds the usage of both sides and the placement.
#include <vector>

#include "loadlab/v1/agent.pb.h"
#include "loadlab/v1/result.pb.h"
#include "results/results.hpp"

namespace loadlab::controller {

// The merged result of several load agents' results. Throws CellError (phase "measure")
// when their histograms cannot be merged.
v1::Repetition merge_load_results(const std::vector<v1::LoadResult>& results);

}  // namespace loadlab::controller
