#pragma once
// loadlab-load's command line: its flags, and their check into LoadOptions (load::validate's
// rules, plus what only the command line has: --body-file, --json or --json-events,
// --csv-requests writable). Bad values throw InputError naming the flag (exit status 2).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "loadlab/load/load_options.hpp"

namespace loadlab::load {

struct LoadFlags {
  LoadOptions options;  // the flags that map straight onto it
  // The ones whose absence means something (a default the validator chooses).
  std::int64_t requests = 0, total = 0;
  double duration = 0, rate = 0, pace_granularity = 0;
  int streams = 0;
  std::uint64_t seed = 0;
  std::string pace_share;  // --pace-share FIRST/TOTAL, parsed by load_options_from
  CLI::Option* requests_opt = nullptr;
  CLI::Option* total_opt = nullptr;
  CLI::Option* duration_opt = nullptr;
  CLI::Option* rate_opt = nullptr;
  CLI::Option* streams_opt = nullptr;
  CLI::Option* seed_opt = nullptr;
  CLI::Option* pace_granularity_opt = nullptr;
  bool no_keepalive = false, json = false, json_events = false;
  std::string body_file;
};

void add_load_flags(CLI::App& app, LoadFlags& flags);

// The run's options from the flags, checked.
[[nodiscard]] LoadOptions load_options_from(const LoadFlags& flags);

}  // namespace loadlab::load
