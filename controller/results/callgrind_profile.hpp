#pragma once
// What grew between two builds, from callgrind's per-function output (a repetition's HIGH
// probe, `profiles/KEY.N.callgrind.out`): each function's self and inclusive count of the first
// event (Ir, instructions), and the functions that grew most from one build's files to the
// other's.
#include <filesystem>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "loadlab/v1/result.pb.h"

namespace loadlab::controller {

struct FunctionCost {
  double self = 0;       // in the function itself
  double inclusive = 0;  // with what it calls (a recursive call counted at each level)
};
using FunctionCosts = std::map<std::string, FunctionCost>;  // by function name

// One callgrind output file's functions (format version 1: name compression, subposition
// compression, calls= lines). Lines it does not know are passed over.
FunctionCosts read_callgrind(std::istream& in);
// The mean over `files` of each function's costs; files that cannot be read are left out (an
// empty result when none can).
FunctionCosts mean_callgrind(const std::vector<std::string>& files);

// The callgrind outputs of repetitions (each a list of v1::Repetition: a cell's repetitions,
// its confirmations), as paths in their run folder `folder`.
template <class... Repetitions>
std::vector<std::string> profile_paths(const std::filesystem::path& folder, const Repetitions&... lists) {
  std::vector<std::string> files;
  auto add = [&](const auto& reps) {
    for (const v1::Repetition& r : reps)
      if (!r.profile_file().empty()) files.push_back((folder / r.profile_file()).string());
  };
  (add(lists), ...);
  return files;
}

// The `top` functions whose self count grew most from `a` to `b` (only those that grew by half an
// instruction per request or more), each figure divided by `requests` (per request).
std::vector<v1::FunctionGrowth> what_grew(const FunctionCosts& a, const FunctionCosts& b, double requests,
                                          size_t top = 10);

// "f +N (self), g +M, ..." instructions per request, for a verdict's reason.
std::string grew_text(const std::vector<v1::FunctionGrowth>& grew, size_t names = 3);

}  // namespace loadlab::controller
