#pragma once
// The printed output of wrk, hey or h2load read into the protocol's LoadResult.
//
// Every LoadResult figure the tool's output gives is filled; the names of those it cannot
// give (proto field names, "latency.p999_us" for a Latency field) are listed in
// `unavailable`, so a report prints "n/a" instead of a 0. What each tool gives, and how its
// counts map onto requests/errors, is tabled in docs/clients.md.
//
// Failure is an exception, never a result: parse_output throws ToolFailed (a
// std::runtime_error whose what() names the tool and quotes its own message) when
//   - the tool exited with a non-zero status or was killed by a signal (bad flag, crash,
//     wrk's "unable to connect"),
//   - its output is not one of the formats known here (garbage, a truncated run), or
//   - no response came back and no request timed out: the target was never reached
//     (connection refused; hey and h2load exit 0 then).
// A run that reached the target returns a result, whatever share of it failed (a server
// answering 503 gives errors == requests). LoadResult.error (field 23) is left empty: the
// exception is the one way a failed tool is reported, as a failed loadlab-load is a failed job.
//
// Pure functions of their arguments; thread-safe.
#include <stdexcept>
#include <string>
#include <vector>

#include "loadlab/clients/tool.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::clients {

class ToolFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParsedRun {
  v1::LoadResult result;
  // Figures of `result` this run's output did not give (also copied to result.unavailable).
  std::vector<std::string> unavailable;
  // The output format recognised, e.g. "wrk", "wrk2", "hey", "hey-printf", "h2load",
  // "h2load-1.0": which fixture family it matches, for logs and tests.
  std::string format;
};

// `exit_code`: the exit status (0..255), or a negative number when killed by a signal.
[[nodiscard]] ParsedRun parse_output(Tool tool, const std::string& stdout_text,
                                     const std::string& stderr_text, int exit_code);

// Every figure parse_output may list in `unavailable`, in LoadResult's field order.
const std::vector<std::string>& all_figures();

}  // namespace loadlab::clients
