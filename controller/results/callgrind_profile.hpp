#pragma once
// What grew between two builds, from callgrind's per-function output (a repetition's HIGH
// probe, `profiles/KEY.N.callgrind.out`): each function's self and inclusive count of the first
// event (Ir, instructions), or from perf's samples of profiled windows (`profiles/KEY.N.server.folded`);
// and the functions that grew most from one build's to the other's.
#include <filesystem>
#include <istream>
#include <map>
#include <optional>
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

// The server's CPU per request by function, from perf's profiles of repetitions (a profiled
// cell's, docs/profiles.md; each a list of v1::Repetition): each repetition's folded stacks
// (its server's CpuProfile.file in the run folder `folder`) as CPU µs per request (each
// function's share of the samples × the server's CPU time over the window ÷ its requests; or
// samples ÷ frequency ÷ requests without a CPU time), averaged over the repetitions that have
// one. Empty when none has.
template <class... Repetitions>
FunctionCosts mean_perf_costs(const std::filesystem::path& folder, const Repetitions&... lists);
// One repetition's (none when its server has no profile kept, or it had no request).
std::optional<FunctionCosts> perf_costs(const std::filesystem::path& folder, const v1::Repetition& r);

// The units a FunctionGrowth is in: callgrind's instructions per request, perf's CPU µs per request.
inline constexpr const char* kInstructionsUnit = "instructions";
inline constexpr const char* kCpuUsUnit = "cpu_us";

// The `top` functions whose self cost grew most from `a` to `b`, each figure divided by
// `requests` (per request), in `unit`. Only those that grew by half an instruction per request
// or more; in CPU µs, by 1 % of `b`'s whole CPU per request or more (perf's samples are a
// sample: less is their noise).
std::vector<v1::FunctionGrowth> what_grew(const FunctionCosts& a, const FunctionCosts& b, double requests,
                                          size_t top = 10, const std::string& unit = kInstructionsUnit);

// "f +N, g +M, ..." per request (self), in the growth's unit, for a verdict's reason.
std::string grew_text(const std::vector<v1::FunctionGrowth>& grew, size_t names = 3);

template <class... Repetitions>
FunctionCosts mean_perf_costs(const std::filesystem::path& folder, const Repetitions&... lists) {
  FunctionCosts sum;
  size_t read = 0;
  auto add = [&](const auto& reps) {
    for (const v1::Repetition& r : reps) {
      const auto costs = perf_costs(folder, r);
      if (!costs) continue;
      ++read;
      for (const auto& [name, cost] : *costs) {
        sum[name].self += cost.self;
        sum[name].inclusive += cost.inclusive;
      }
    }
  };
  (add(lists), ...);
  for (auto& [name, cost] : sum) {
    cost.self /= static_cast<double>(read);
    cost.inclusive /= static_cast<double>(read);
  }
  return sum;
}

}  // namespace loadlab::controller
