#include "run/instructions.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/logging.hpp"
#include "run/cpu_profiles.hpp"

namespace loadlab::controller {

namespace {

// The probe's cell: one thread, one connection, the built-in client at an even pace, each slot
// at its time (InstructionsDef::rate); the target as the cell has it.
Cell probe_cell(const Cell& c, double rate) {
  Cell p = c;
  p.threads = 1;
  p.connections = 1;
  p.rate = rate;
  p.arrivals = proto::kUniformArrivals;
  p.pace_granularity_us = 0;
  p.client = kBuiltinClient;
  p.streams = 1;
  p.window_s.reset();
  p.instructions.reset();  // the probe asks callgrind itself (RepetitionOptions)
  p.profile.reset();       // perf would sample valgrind's translation, not the target
  return p;
}

// One probe of `requests` requests: the instructions of its target's life, or why none.
std::optional<uint64_t> one_probe(const Placement& placement, Scenario& s, const Cell& cell,
                                  RepetitionOptions options, uint64_t requests, InstructionsProbe& out) {
  s.load.total_requests = requests;
  v1::Exited exited;
  options.callgrind_exited = &exited;
  v1::Repetition r;
  try {
    r = run_repetition(placement, s, cell, options);
  } catch (const CellError& e) {
    out.unavailable = "the callgrind probe of " + std::to_string(requests) + " requests failed: " + e.what();
    return std::nullopt;
  }
  if (r.requests() != requests || r.errors() != 0) {
    out.unavailable = "the callgrind probe of " + std::to_string(requests) + " requests completed " +
                      std::to_string(r.requests()) + " with " + std::to_string(r.errors()) + " errors";
    return std::nullopt;
  }
  if (!exited.has_instructions()) {
    out.unavailable = exited.instructions_unavailable();
    return std::nullopt;
  }
  out.profile = exited.profile();
  return exited.instructions();
}

}  // namespace

InstructionsProbe probe_instructions(const Placement& placement, const Scenario& s, const Cell& c,
                                     const RepetitionOptions& options) {
  InstructionsProbe out;
  const InstructionsDef def = s.instructions.value_or(InstructionsDef{});
  Scenario probe = s;
  probe.load.requests_per_thread.reset();
  probe.load.duration_s.reset();
  probe.load.warmup_s = 0;
  // Under callgrind a request takes ~50 times as long, the first ones longer still.
  probe.load.timeout_ms = std::max<uint32_t>(probe.load.timeout_ms, 60'000);
  Placement p = placement;
  p.loads.resize(1);
  p.load_cpus.resize(std::min<size_t>(p.load_cpus.size(), 1));
  RepetitionOptions o = options;
  o.progress = nullptr;
  o.limits.ready_s = std::max(o.limits.ready_s, 150.0);
  o.limits.stop_s = std::max(o.limits.stop_s, 60.0);
  const Cell cell = probe_cell(c, def.rate);
  const auto low = one_probe(p, probe, cell, o, def.requests_low, out);
  if (!low) return out;
  const auto high = one_probe(p, probe, cell, o, def.requests_high, out);
  if (!high) return out;
  if (*high <= *low) {
    out.unavailable = "the instructions did not grow with the requests (" + std::to_string(*low) + " for " +
                      std::to_string(def.requests_low) + ", " + std::to_string(*high) + " for " +
                      std::to_string(def.requests_high) + ")";
    return out;
  }
  out.per_request =
      static_cast<double>(*high - *low) / static_cast<double>(def.requests_high - def.requests_low);
  return out;
}

void record_probe(InstructionsProbe probe, const Cell& c, const std::string& profile_dir, v1::Repetition& r) {
  if (!probe.per_request) {
    r.set_instructions_unavailable(probe.unavailable);
    return;
  }
  r.set_instructions_per_request(*probe.per_request);
  if (probe.profile.empty() || profile_dir.empty()) return;
  namespace fs = std::filesystem;
  const fs::path file =
      next_profile_stem(profile_dir, c.key(), {".callgrind.out"}).string() + ".callgrind.out";
  if (!write_profile_file(file, probe.profile)) return;
  r.set_profile_file((fs::path(profile_dir).filename() / file.filename()).string());
}

}  // namespace loadlab::controller
