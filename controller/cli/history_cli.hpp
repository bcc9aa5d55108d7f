#pragma once
// `loadlab history FILE`: the runs of a history database; with --cell, one cell's trend of
// a metric; with --changes, the runs where a cell's figure moved to a new level
// (change_points.hpp). main.cpp only registers the subcommand and dispatches to it.
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace loadlab::controller {

struct HistoryCliOptions {
  std::string file;      // the database
  std::string cell;      // --cell KEY: its trend (or, with --changes, only its changes)
  std::string metric;    // --metric: one of metric_names(); trend default qps, changes default all
  std::string scenario;  // --scenario NAME: only its runs and cells
  bool changes = false;  // --changes
  size_t last = 0;       // --last N: only each series' newest N runs (0 = all)
  // --verdicts: the nightly verdict replayed over every night, each against the nights before
  // it (as `loadlab run --baseline history` judged or would have judged it); with --csv, one
  // line per night and cell.
  bool verdicts = false;
  bool csv = false;
  uint32_t baseline_nights = 0;  // --baseline-nights K (0: the scenario's)
  // `loadlab history FILE accept CELL|all --run ID`: a new level from run ID on.
  std::string accept_cell;
  int64_t accept_run = 0;
  std::string accept_note;
  // `loadlab history FILE add RUN...`: run folders (or result.json files) stored, in order.
  std::vector<std::string> add_runs;
};

// Prints what `o` asks for to `out`. Exit status 0; InputError (exit 2) for a missing
// database, an unknown metric, cell or scenario.
int run_history(const HistoryCliOptions& o, std::ostream& out);

// The subcommand as registered on the loadlab command line.
class HistoryCommand {
 public:
  void add_to(CLI::App& app);
  bool chosen() const;
  int run(std::ostream& out) const;

 private:
  HistoryCliOptions options_;
  CLI::App* command_ = nullptr;
  CLI::App* accept_ = nullptr;
  CLI::App* add_ = nullptr;
};

}  // namespace loadlab::controller
