#pragma once
// A job's CPU profile over its measured window (ProfileSpec → CpuProfile, docs/profiles.md):
// perf started on the job's processes when the window opens, stopped when it closes, and
// folded before the window's usage is answered. A profile that cannot be made says why in
// CpuProfile.unavailable: the job runs and is measured either way. Internal to the agent.
#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/agent/profiler.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

// OK, or INVALID_ARGUMENT naming `field` (e.g. "LoadSpec.profile") and what is allowed.
grpc::Status check_profile_spec(const v1::ProfileSpec& spec, const std::string& field);

// `stacks` as a CpuProfile: their folded text (the rarest stacks left out beyond `max_bytes`,
// their samples in dropped_samples), samples and rooted share; the frequency and call graph
// are the caller's to set.
v1::CpuProfile cpu_profile(const FoldedStacks& stacks, size_t max_bytes);

class JobProfile {
 public:
  // `support`: what the agent found it can do at its start; `perf`: its --perf.
  JobProfile(const v1::ProfileSpec& spec, const v1::ProfilingSupport& support, std::string perf);
  ~JobProfile();
  JobProfile(const JobProfile&) = delete;
  JobProfile& operator=(const JobProfile&) = delete;

  bool asked() const { return spec_.frequency_hz() > 0; }
  // The window opens: perf starts on `pids` (each with its threads). A failure is kept for
  // finish(), never thrown. Unasked, or a second time: nothing.
  void start(const std::vector<pid_t>& pids);
  // The window closes: perf stops recording (what follows is not sampled).
  void end_window();
  // The profile (folded: may take seconds), or why there is none; nullopt when not asked.
  // Once: a window that opens after it starts no perf.
  std::optional<v1::CpuProfile> finish();

 private:
  v1::CpuProfile unavailable(const std::string& why) const;

  v1::ProfileSpec spec_;
  v1::ProfilingSupport support_;
  std::string perf_;
  std::mutex mutex_;  // a scheduled load window opens on the thread that reads its commands
  bool started_ = false;
  std::unique_ptr<WindowProfile> recording_;
  std::string failure_;
};

}  // namespace loadlab::agent
