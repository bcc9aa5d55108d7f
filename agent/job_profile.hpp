#pragma once
// A job's CPU profile over its measured window (ProfileSpec → CpuProfile, docs/profiles.md):
// perf started on the job's processes when the window opens, stopped when it closes, and
// folded before the window's usage is answered. A profile that cannot be made says why in
// CpuProfile.unavailable: the job runs and is measured either way. Internal to the agent.
#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <functional>
#include <future>
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

// How long call_graph "auto" samples with frame pointers before it chooses; a probe that saw
// fewer than kProbeSamples samples (perf slow to start on a busy machine, an idle process) is
// followed by one twice as long, at most twice, while the window lasts.
inline constexpr std::chrono::milliseconds kUnwindProbe{250};
inline constexpr uint64_t kProbeSamples = 20;

// call_graph "auto"'s choice from the stacks of a frame-pointer probe of `probe_s` seconds:
// "fp" when at least 90 % of them reach their thread's start, otherwise "dwarf" (also when the
// probe saw fewer than kProbeSamples samples: too few to judge frame pointers, and dwarf
// unwinds either way); and why, in words (CpuProfile.call_graph_probe).
std::pair<std::string, std::string> choose_call_graph(const FoldedStacks& probe, double probe_s);

class JobProfile {
 public:
  // `support`: what the agent found it can do at its start; `perf`: its --perf; `cancelled`:
  // whether the job's call was cancelled (perf is then stopped, not waited for).
  JobProfile(const v1::ProfileSpec& spec, const v1::ProfilingSupport& support, std::string perf,
             std::function<bool()> cancelled = {});
  ~JobProfile();
  JobProfile(const JobProfile&) = delete;
  JobProfile& operator=(const JobProfile&) = delete;

  bool asked() const { return spec_.frequency_hz() > 0; }
  // The window opens: perf starts on `pids` (each with its threads); with call_graph "auto",
  // after a probe of kUnwindProbe (or longer) on a thread of its own (its samples kept when it
  // chooses "fp"). A failure is kept for finish(), never thrown. Unasked, or a second time: nothing.
  void start(const std::vector<pid_t>& pids);
  // The window closes: perf stops recording (what follows is not sampled).
  void end_window();
  // The profile (folded: may take seconds), or why there is none; nullopt when not asked.
  // Once: a window that opens after it starts no perf.
  std::optional<v1::CpuProfile> finish();

 private:
  v1::CpuProfile unavailable(const std::string& why) const;
  // perf's recording with `call_graph` from now on; mutex_ held.
  void record(const std::vector<pid_t>& pids, const std::string& call_graph);
  // call_graph "auto": the probe, its choice, then the recording (unless the window has ended).
  void probe_then_record(const std::vector<pid_t>& pids);
  // The probe's frame-pointer samples and how long it sampled; throws EnvironmentError.
  FoldedStacks probe(const std::vector<pid_t>& pids, std::chrono::milliseconds& took);
  // The profile of what was recorded (and the probe's samples); mutex_ held.
  v1::CpuProfile fold();

  v1::ProfileSpec spec_;
  v1::ProfilingSupport support_;
  std::string perf_;
  std::function<bool()> cancelled_;
  std::mutex mutex_;  // a scheduled load window opens on the thread that reads its commands
  bool started_ = false;
  bool window_ended_ = false;
  std::unique_ptr<WindowProfile> recording_;
  std::string failure_;
  std::string call_graph_;     // what unwinds the stacks: the spec's, or auto's choice
  std::string probe_note_;     // auto: why it chose call_graph_
  FoldedStacks probe_stacks_;  // auto: the probe's samples, kept when it chose "fp"
  std::future<void> probe_;    // last: destroyed (waited for) before what the probe touches
};

}  // namespace loadlab::agent
