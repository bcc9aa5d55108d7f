#pragma once
// One HostTarget stream: start the target, say when it is ready, answer marks with usage,
// report an early death, and stop it when the stream ends. Runs on the gRPC thread that
// serves the stream; its sampler thread also writes (an early exit). Internal.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "instruction_counts.hpp"
#include "job_profile.hpp"
#include "job_support.hpp"
#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/build_cache.hpp"
#include "loadlab/agent/job_slot.hpp"
#include "loadlab/agent/ports.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "loadlab/shared/endpoint.hpp"

namespace loadlab::agent {

class TargetJob {
 public:
  using Stream = grpc::ServerReaderWriterInterface<v1::TargetEvent, v1::TargetCommand>;
  TargetJob(const AgentOptions& options, ProcFsReader& proc, BuildCache& builds, grpc::ServerContext* ctx,
            Stream* stream)
      : options_(options), proc_(proc), builds_(builds), ctx_(ctx), stream_(stream) {}

  // `spec` is valid and names `entry`; `lease` holds the agent's target slot.
  grpc::Status run(const v1::TargetSpec& spec, const CatalogEntry& entry, JobLease& lease);

 private:
  // A target built from a commit: its build, made first if the cache lacks it (Building,
  // Built), and the entry with {build_dir} filled in.
  grpc::Status build(const v1::TargetSpec& spec, const CatalogEntry& entry, CatalogEntry& built);
  grpc::Status prepare(const v1::TargetSpec& spec, const CatalogEntry& entry);
  // TargetSpec.instructions: the target under callgrind, or counters at the window's marks;
  // where it cannot be counted, the reason (the target then runs as it would).
  grpc::Status prepare_instructions(const v1::TargetSpec& spec, const CatalogEntry& entry);
  void count_window(const v1::Mark& mark, v1::Usage& usage);  // counters: at RESET and FINAL
  grpc::Status launch();
  grpc::Status wait_ready(const v1::TargetSpec& spec, const CatalogEntry& entry);
  grpc::Status fail_start(const std::string& why);
  void serve_marks();
  // RESET opens the window; FINAL closes it and gives its Usage, for send_usage().
  std::optional<v1::TargetEvent> apply_mark(const v1::Mark& mark);
  void send_usage(v1::TargetEvent& ev);  // with the window's profile, once folded
  bool on_sample();                      // sampler thread: false once the target has died
  grpc::Status stop();
  // False when the stream is gone (the read loop then ends and the target is stopped).
  bool write(const v1::TargetEvent& ev);
  void write_exited(const ExitStatus& st, size_t tail_lines);

  const AgentOptions& options_;
  ProcFsReader& proc_;
  BuildCache& builds_;
  std::unique_ptr<BuildCache::Pin> pin_;  // the build the target runs from
  grpc::ServerContext* ctx_;
  Stream* stream_;
  std::mutex write_mutex_;  // the sampler thread writes too
  std::string over_limit_;  // set by the sampler thread before it stops the tree

  std::string name_;
  unsigned threads_ = 1;
  std::string build_;  // Started.build
  std::vector<std::string> argv_;
  SpawnOptions spawn_options_;
  std::unique_ptr<AuxFolder> files_;       // a catalog target's {tls_cert} and {tls_key}
  std::unique_ptr<PortReservation> port_;  // a catalog target's port, held while it runs
  std::optional<Endpoint> endpoint_;
  double started_at_ = 0;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<UsageWindow> window_;
  std::unique_ptr<JobProfile> profile_;  // TargetSpec.profile: over the window, RESET to FINAL
  std::atomic<bool> died_{false};

  v1::InstructionsMethod instructions_ = v1::INSTRUCTIONS_NONE;
  std::string instructions_unavailable_;       // why they cannot be counted, found before the start
  std::unique_ptr<CallgrindProbe> callgrind_;  // INSTRUCTIONS_CALLGRIND
  InstructionCounters counters_;               // INSTRUCTIONS_COUNTERS
};

}  // namespace loadlab::agent
