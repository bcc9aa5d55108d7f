#pragma once
// `loadlab run`: a whole run. Agents (from a lab file, or one embedded agent), every cell
// with its repetitions and retries (CellExecutor), the run folder with its journal
// (RunFolder), --resume.
#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "lab/agent_pool.hpp"
#include "lab/embedded_agent.hpp"
#include "lab/watchdog.hpp"
#include "run/run_metrics.hpp"

namespace loadlab::controller {

// --baseline history: each cell against its earlier nights in --history (the noise model);
// "history:last-good" is the same (its old name).
inline constexpr const char* kHistory = "history";
inline constexpr const char* kLastGood = "history:last-good";

struct RunOptions {
  std::string scenario_path;
  std::vector<std::string> overrides;  // --set PATH=VALUE, applied to the scenario in order
  std::string lab_path;                // "" = start an embedded agent on a loopback port
  std::string lab_credentials_path;    // "" = the lab file's own tls and token_file
  std::string out_dir;                 // "" = runs/<scenario name>-<UTC time>
  std::string resume_dir;              // continue the run in this folder (its scenario copy and journal)
  // --include-root DIR: where the scenario's includes must resolve; "" = the scenario file's
  // folder (for a folder of scenarios, that folder).
  std::string include_root;
  // Judge the finished run: kHistory (each cell against its earlier nights in `history`), or
  // against this run folder or result.json (two runs). A cell that looks like a regression is
  // measured again first (execution.confirm). Verdicts in result.json and after the table, exit
  // status 1 on a regression.
  std::string baseline;
  std::optional<uint32_t> baseline_nights;  // --baseline-nights K: regression.baseline_nights
  // Append the finished run to this SQLite history (created if new), and show each cell's
  // trend in result.json and report.html.
  std::string history;
  std::string bin_dir;  // embedded agent: folder of loadlab-target/-load; "" = this executable's
  EmbeddedAgentFactory embedded_agent;  // starts the agent of a run without a lab
  // The client end of each lab agent; empty = gRPC channels (grpc_stub); and how a call is
  // cancelled, empty = ClientContext::TryCancel. Tests give fake agents and their cancel.
  StubFactory agent_stubs;
  CallCanceller cancel_calls;
  bool quiet = false;  // no progress bar: plain log lines, as in CI
  // Fed with the run's progress, when given (--metrics-listen serves it).
  RunMetrics* metrics = nullptr;
  // Nonzero (the signal's number) once SIGINT/SIGTERM asks the run to stop: the cell in
  // progress is cancelled and not recorded, retry waits and cool-downs end at once.
  const std::atomic<int>* stop = nullptr;
};

// The lab's agents (o.lab_path, or `lab_path` when given) into `pool`, or one embedded agent
// reached over the same gRPC path (then returned: it must outlive the pool's channel to it).
std::unique_ptr<EmbeddedAgent> connect_agents(const RunOptions& o, const std::string& lab_path,
                                              AgentPool& pool);
// Now in UTC, strftime's `format`.
std::string utc_now(const char* format);

// Returns the exit status (loadlab/shared/exit_status.hpp): 0 when every cell succeeded, 1 when
// a baseline was given and a cell regressed, 3 when some cells failed, 128 + the signal when
// `stop` ended the run early (its finished cells kept for --resume); several at once by
// exit_status::worst. Throws loadlab::InputError for bad input (exit status 2) and
// EnvironmentError (4).
// `run_folder`, when given, is set to the run's folder once it is made.
int run_scenario(const RunOptions& options, std::ostream& table_out, std::string* run_folder = nullptr);

}  // namespace loadlab::controller
