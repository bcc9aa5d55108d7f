#pragma once
// A scenario: what to run (targets × matrix) and how to load each cell. Parsed strictly
// from JSON; see docs/scenario.md for the reference.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loadlab/proto/protocols.hpp"
#include "scenario/regression.hpp"

namespace loadlab::controller {

// The figures a capacity search's objectives can bound: "p50_ms", "p90_ms", "p99_ms",
// "p999_ms", "max_ms", "errors_pct".
const std::vector<std::string>& slo_figures();

inline constexpr const char* kBuiltinClient = "loadlab";  // loadlab-load

struct TargetDef {
  std::string name;
  std::string builtin;                // set for a built-in target ("hello")
  std::string catalog;                // set for an agent catalog entry
  std::string body;                   // response body; "" = the target's default
  std::optional<uint64_t> body_size;  // instead of body: this many filler bytes
  uint32_t server_threads = 0;        // 0 = the agent's core count
  uint32_t delay_ms = 0;              // server-side delay, when delay_ms is not an axis
  // A catalog target built from a commit: the ref the scenario names ("main", a tag, a sha),
  // and the commit it named when the run started (resolved once, by a target agent).
  std::string commit;
  std::string commit_sha, commit_subject;
};

struct LoadDef {
  // Exactly one stop condition.
  std::optional<uint64_t> requests_per_thread;
  std::optional<uint64_t> total_requests;
  std::optional<double> duration_s;
  uint32_t threads = 1;  // when threads is not an axis
  uint32_t connections_per_thread = 1;
  std::optional<uint32_t> connections;  // total, instead of connections_per_thread
  std::string client = kBuiltinClient;  // when client is not an axis
  double warmup_s = 0;
  bool keep_alive = true;
  std::string method = "GET";
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  uint32_t timeout_ms = 0;          // 0 = the worker's default
  double rate = 0;                  // open loop: requests/s over the whole cell; 0 = closed loop
  std::string protocol = "http1";   // when protocol is not an axis (loadlab/proto/protocols.hpp)
  std::string tls_version = "1.3";  // over TLS, forced; when tls_version is not an axis
  bool tls_resume = false;          // over TLS, a reconnection offers its previous session
  bool zero_rtt = false;            // h3 cells with tls_resume: resumed connections send 0-RTT data
  uint32_t streams = 1;             // HTTP/2: requests in flight per connection; when streams is not an axis
  // Open loop: how the send times fall, "uniform" or "poisson" (LoadSpec.arrivals); when
  // arrivals is not an axis. `seed`: poisson's draws (the same seed, the same send times).
  std::string arrivals{proto::kUniformArrivals};
  uint64_t seed = 1;
  // Open loop: the worker's pacing granularity, µs (LoadSpec.pace_granularity_us); when
  // pace_granularity_us is not an axis.
  uint32_t pace_granularity_us = 0;
};

// A figure a step must keep within its limit: a latency percentile (from the intended send
// times: the open loop's corrected latency) or the error rate.
struct SloObjective {
  std::string figure;  // one of slo_figures()
  double limit = 0;    // ms for latencies, % of requests for errors_pct
};

// The scenario's `search` block (docs/capacity.md): every cell is a capacity search.
struct SearchDef {
  std::vector<SloObjective> slo;  // all must hold
  double rate_min = 100, rate_max = 1e6;
  double precision_pct = 2;       // the bisection ends when (hi - lo) / lo is at most this
  double step_s = 5;              // a step's measured window, at least (min_requests / rate)
  uint64_t min_requests = 20000;  // a step's window holds at least this many (a p99 needs them)
  double validate_s = 30;         // the validation run's window
  uint32_t max_threads = 0;       // client-bound steps add load threads up to this; 0: never
  uint32_t max_connections = 0;   // connections a step may have; 0: the load's limits
};

// Which agents of the lab take which part of a cell.
struct PlacementDef {
  std::string target_role = "target";
  std::vector<std::pair<std::string, std::string>> target_labels;  // all must match
  std::string load_role = "load";
  std::vector<std::pair<std::string, std::string>> load_labels;
  uint32_t load_agents = 1;   // load agents driving each cell together
  bool share_agents = false;  // may the target's agent also run load? (always, in a one-agent lab)
  // The CPUs the target and the load run on (docs/scenario.md, "CPU placement"): kAuto splits
  // an agent's CPUs between the two sides when it hosts both; kSets names them; kNone leaves
  // the scheduler free.
  enum class Cpus { kAuto, kSets, kNone };
  Cpus cpus = Cpus::kAuto;
  std::string target_cpus, load_cpus;  // kSets: a CPU list each ("" = that side not pinned)
};

struct ExecutionDef {
  uint32_t retries = 2;                  // per repetition, on the same or another eligible agent
  double retry_backoff_s = 1;            // first retry's wait for its agents; doubles up to 30 s; 0 = none
  double cooldown_s = 0;                 // pause between cells
  std::optional<uint64_t> shuffle_seed;  // run cells in a seeded random order
  double ready_s = 30, warmup_extra_s = 30, measure_s = 0, stop_s = 15;  // phase deadlines
  // Confirm before alarm: a cell that looks like a regression against its baseline is
  // measured again at the end of the run with this many repetitions (nullopt: the scenario's
  // `repetitions`; 0: never). every_cell: every cell is, baseline or not (a bench recording the
  // confirmations a replay needs).
  std::optional<uint32_t> confirm;
  bool confirm_every_cell = false;
  // A cell whose measurement a run judged against its history found disturbed (other work on
  // its CPUs) is measured again at the end of the run, on fresh targets, and judged by that;
  // while it is still disturbed, up to this many times, the later ones after waiting
  // remeasure_wait_s, then twice that, ... (0: never).
  uint32_t remeasure_disturbed = 3;
  double remeasure_wait_s = 30;
  // A scheduled start's windows further apart than this are flagged `window-skew`
  // (Repetition.window_skew_ms); nullopt: 1 % of the window.
  std::optional<double> max_skew_ms;
};

// The knobs a matrix axis may vary (docs/scenario.md, "Matrix").
enum class Knob {
  kDelayMs,
  kThreads,
  kConnectionsPerThread,
  kConnections,
  kRate,
  kBodySize,
  kServerThreads,
  kKeepAlive,
  kClient,
  kProtocol,
  kTlsVersion,
  kStreams,
  kArrivals,
  kPaceGranularity
};

struct KnobInfo {
  Knob knob;
  const char* name;        // the axis name in a scenario, e.g. "delay_ms"
  const char* key_prefix;  // in cell keys, e.g. "d" (beast/d5/t10); "" for names (wrk)
  const char* column;      // the table's column, e.g. "delay ms"
};
// Every knob, in the order the docs list them.
const std::vector<KnobInfo>& knobs();
[[nodiscard]] const KnobInfo* find_knob(const std::string& name);

// One axis of the matrix: a knob and its values, each as a JSON scalar (number, boolean
// or name) and as keys and columns show it.
struct MatrixAxis {
  Knob knob;
  std::string name;
  std::vector<nlohmann::json> values;
  std::vector<std::string> texts;
};

// "instructions": each repetition of the cells it names (every cell when it names none) also
// counts the target's user-space instructions per request (docs/instructions.md).
// How a cell's instructions per request are counted: under callgrind, or by the CPU's counters
// in user space. Spelt "callgrind", "counters" (instructions_method_name) in the scenario, the
// cells' config in result.json, and the history.
enum class InstructionsMethod { kCallgrind, kCounters };
std::string_view instructions_method_name(InstructionsMethod m);
std::optional<InstructionsMethod> instructions_method_named(std::string_view name);

struct InstructionsDef {
  InstructionsMethod method = InstructionsMethod::kCallgrind;
  // callgrind: the sequential requests of its two probes; the figure is their difference's.
  uint64_t requests_low = 200;
  uint64_t requests_high = 1200;
  // callgrind: the probes' even pace, requests per second (0 = one after another). A request
  // that arrives while the target is still finishing the one before takes another path (a read
  // that finds its data at once, no wait in epoll), which moves the count with the timing: at
  // a pace the target is idle when each request comes.
  double rate = 400;
  std::vector<std::string> cells;  // cell keys; empty = every cell
};

// "profile" (docs/profiles.md): the cells it names (every cell when it names none) are sampled
// with Linux perf over each repetition's window, the server's process tree and the load
// workers; the settings are part of the cell's (its nights are judged only against nights
// profiled alike).
struct ProfileSetting {
  uint32_t frequency_hz = 0;  // ProfileSpec's; 0 = not profiled
  std::string call_graph;     // "auto", "fp" or "dwarf"
};
struct ProfileDef {
  ProfileSetting setting;
  std::vector<std::string> cells;  // cell keys; empty = every cell
};

struct Scenario {
  std::string name;
  std::string description;
  std::vector<TargetDef> targets;
  std::vector<MatrixAxis> matrix;  // in the scenario's order; the last axis turns fastest
  LoadDef load;
  uint32_t repetitions = 1;
  PlacementDef placement;
  ExecutionDef execution;
  RegressionDef regression;
  // "ab": two targets of `targets` run interleaved, cell by cell and repetition by repetition
  // (A B, B A, ...), and B judged against A with a paired test. Empty when not asked.
  std::string ab_a, ab_b;
  // "ab"'s "cells": the cells of B that run with a partner of A (the others of B run alone, and
  // A's other cells not at all). Empty: every cell of B.
  std::vector<std::string> ab_cells;
  // "search": every cell is a capacity search under these objectives, not one measurement.
  std::optional<SearchDef> search;
  std::optional<InstructionsDef> instructions;
  std::optional<ProfileDef> profile;
  nlohmann::json source;               // the scenario as run (overrides applied), kept in result.json
  std::string source_text;             // the same, as text in the file's key order (the run folder's copy)
  std::vector<std::string> overrides;  // the --set assignments applied, in order
  // Every file read to make it: the scenario file first, then the files it includes (and
  // they include), in the order they were read. One file when it includes none.
  std::vector<std::string> files;
};

// regression.ab_last_good: the name of the target the nightly adds for the last good night's
// build of `target`, and the scenario's target whose last good build it runs (none when off).
std::string last_good_target_name(const std::string& target);
const TargetDef* last_good_ab_target(const Scenario& s);

// Throws loadlab::InputError naming the JSON path of the first problem, including a cell
// whose knobs do not go together (e.g. fewer connections than threads), named by the
// paths of the values that make it. `matrix_order`: the matrix's keys as written (a
// nlohmann::json object iterates in key order); empty = that order.
[[nodiscard]] Scenario parse_scenario(const nlohmann::json& j,
                                      const std::vector<std::string>& matrix_order = {});
// Reads the file and keeps the matrix's axes in the order the file writes them. A file's
// `include` (a path or an array of paths, relative to the file) names scenario files it
// builds on: they are read first (and their own includes before them), merged in order, and
// the file's other keys are merged over them as a JSON merge patch (RFC 7386: objects merge
// key by key, null removes a key, anything else, arrays too, replaces); a key of the merged
// scenario that is wrong is reported in the file that wrote it. Each of
// `overrides` ("load.total_requests=5000000": a dotted path, '=', a JSON value or else a
// string) replaces or adds that value before the scenario is checked; a bad assignment is an
// InputError naming --set. Every include must resolve (symlinks followed) inside
// `include_root`: the operator's --include-root, or when empty the folder of `path` (a
// scenario repository must not read a file of the machine outside its tree into a run);
// one that does not is an InputError naming the include, where it leads and the root.
[[nodiscard]] Scenario load_scenario_file(const std::string& path,
                                          const std::vector<std::string>& overrides = {},
                                          const std::string& include_root = "");
// The same from the file's text; `origin` names the file in errors, and its folder is where
// its includes are found (and their root, when `include_root` is empty).
[[nodiscard]] Scenario parse_scenario_text(const std::string& text, const std::string& origin,
                                           const std::vector<std::string>& overrides = {},
                                           const std::string& include_root = "");
// The folder `include_root` names, or `origin`'s when it is empty, with its symlinks resolved:
// every file a scenario reads must resolve inside it.
[[nodiscard]] std::string include_root_of(const std::string& origin, const std::string& include_root);
// `path` (a file a scenario reads) with its symlinks resolved, when that lies outside `root`
// (as include_root_of gives it); nullopt when it is inside.
[[nodiscard]] std::optional<std::string> resolves_outside(const std::string& path, const std::string& root);

// A scenario's name becomes part of its run folder's name (runs/NAME-TIME), so it is a
// plain file name: 1..kMaxNameLength of letters, digits, '.', '_', '-', not starting with
// '.' (no "..", no hidden folder, no '/' to leave runs/).
inline constexpr size_t kMaxNameLength = 100;
bool is_safe_name(const std::string& name);

// The JSON path of the value `knob` takes in a cell of target `target` at `digits` (see
// for_each_cell): its matrix axis value, or the fixed setting it comes from.
std::string knob_path(const Scenario& s, Knob knob, size_t target, const std::vector<size_t>& digits);

}  // namespace loadlab::controller
