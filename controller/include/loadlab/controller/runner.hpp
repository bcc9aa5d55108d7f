#pragma once
// A whole run: agents (from a lab file, or one embedded agent), every cell and repetition,
// result files written as cells finish.
#include <ostream>
#include <stdexcept>
#include <string>

namespace loadlab::controller {

struct RunOptions {
  std::string scenario_path;
  std::string lab_path;  // "" = start an embedded agent on a loopback port
  std::string out_dir;   // "" = runs/<scenario name>-<UTC time>
  std::string bin_dir;   // embedded agent: folder of loadlab-target/-load; "" = this executable's
  bool quiet = false;    // no per-cell progress lines
};

// The lab could not be used (agent unreachable, ...): exit status 1.
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Returns the exit status: 0 when every cell succeeded, 3 when some failed. Throws
// loadlab::InputError for bad input (exit status 2) and EnvironmentError.
int run_scenario(const RunOptions& options, std::ostream& table_out);

}  // namespace loadlab::controller
