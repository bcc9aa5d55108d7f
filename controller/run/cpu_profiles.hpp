#pragma once
// A run folder's profiles (`profiles/`): callgrind's outputs of the instructions probes, and
// the CPU profiles of profiled cells (the scenario's `profile`, docs/profiles.md), each a file
// named after its cell and repetition.
#include <filesystem>
#include <string>
#include <vector>

#include "loadlab/shared/folded_stacks.hpp"
#include "loadlab/v1/result.pb.h"
#include "scenario/plan.hpp"

namespace loadlab::controller {

// "DIR/KEY.N": the first N for which no file DIR/KEY.N + each of `suffixes` exists (the key's
// '/' written '_'), so that a cell's repetitions, confirmations and retries each have their
// own. `dir` is made when needed.
std::filesystem::path next_profile_stem(const std::string& dir, const std::string& key,
                                        const std::vector<std::string>& suffixes);
// Writes `text` to `file`; false, with a warning, when it could not.
bool write_profile_file(const std::filesystem::path& file, const std::string& text);

// `stacks` as a gzipped pprof profile (pprof's own profile.proto): a function and a location
// per frame name (folded stacks keep names, not addresses), the thread's name the outermost
// frame; each stack a sample with its count and `ns_per_sample` × its count of CPU
// nanoseconds (the window's measured CPU time shared among its samples, as loadlab never
// reads samples as CPU time); the profile `window_s` long. Empty when zlib fails.
std::string pprof_gzip(const FoldedStacks& stacks, double ns_per_sample, double window_s);

// A profiled repetition's CPU profiles into `profile_dir`: the server's (Repetition.server) and
// the load workers' (Repetition.client: every load agent's merged) folded stacks, as
// KEY.N.server.folded and KEY.N.client.folded, each named in its CpuProfile.file relative to
// the folder above `profile_dir`, and each beside it as a pprof profile (KEY.N.server.pb.gz,
// KEY.N.client.pb.gz). The folded text itself leaves the repetition (result.json
// keeps the files' names and figures), the load parts' too. The repetition is flagged
// "profiled". Nothing for a cell not profiled.
void keep_cpu_profiles(const Cell& c, const std::string& profile_dir, v1::Repetition& r);

}  // namespace loadlab::controller
