#pragma once
// report.html's "Profiles" section (docs/profiles.md): for each profiled cell, the server's and
// the client's flame graph of its median repetition, with the functions that took the most
// samples, by their own and with what they call.
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "loadlab/shared/folded_stacks.hpp"
#include "results/results.hpp"

namespace loadlab::controller {

struct ProfileSide {
  std::string side;  // "server" or "client"
  FoldedStacks stacks;
  v1::CpuProfile profile;   // its figures (the folded text is in `stacks`)
  std::string unavailable;  // why there is nothing to draw, or (with stacks) a load agent had none
};
struct CellProfiles {
  std::string key;
  std::vector<ProfileSide> sides;
};

// The profiles of the profiled cells among `cells`, their median repetitions', read from the
// run folder `dir`; a file that cannot be read is shown as unavailable, with why.
std::vector<CellProfiles> read_cell_profiles(const std::filesystem::path& dir,
                                             const std::vector<CellResult>& cells);

// A differential flame graph: `after`, a cell's server, drawn against `before` (each frame
// coloured by how its share of the samples moved), or, without stacks, why there is none.
struct ProfileDiff {
  std::string key;      // the cell drawn
  std::string against;  // "beast/d0/t1" (an A/B's A cell), "the night of ..."
  FoldedStacks after, before;
  std::string none;  // why there is no graph
};

// A cell's server stacks over all its repetitions and confirmations, summed, read from the run
// folder `dir`; empty when none was kept.
FoldedStacks summed_server_stacks(const std::filesystem::path& dir, const CellResult& c);

// The differential flame graphs `verdicts` ask for (the scenario's `ab`'s, a --baseline's, in
// any order; a cell against one base once): each A/B pair whose cells were both profiled, B's server against
// A's (their median repetitions, as `profiles` has them; a nightly A/B against the last good build too); each
// regression judged against the history with a profile_base, tonight's repetitions summed against that file
// of `dir`, or profile_base_from's reason where there is none.
std::vector<ProfileDiff> profile_diffs(const std::filesystem::path& dir, const std::vector<CellResult>& cells,
                                       const std::vector<CellProfiles>& profiles,
                                       const std::vector<const v1::Verdicts*>& verdicts);

// How many functions each table lists.
inline constexpr size_t kTopFunctions = 20;

// Nothing when there are no profiles. The differential graphs first, then each profiled cell's
// server and client.
void write_profiles_section(std::ostream& o, const std::vector<CellProfiles>& profiles,
                            const std::vector<ProfileDiff>& diffs = {});

}  // namespace loadlab::controller
