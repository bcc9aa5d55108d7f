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

// How many functions each table lists.
inline constexpr size_t kTopFunctions = 20;

// Nothing when there are no profiles. With an A/B's verdicts, each pair whose cells were both
// profiled first gets B's server drawn against A's (a differential flame graph).
void write_profiles_section(std::ostream& o, const std::vector<CellProfiles>& profiles,
                            const v1::Verdicts* ab = nullptr);

}  // namespace loadlab::controller
