#pragma once
// One RunLoad stream: start loadlab-load for a validated spec, relay its LoadEvent lines,
// open the client's usage window at MeasureStart and close it at the Result, then send
// Usage. Runs on the gRPC thread that serves the stream; a scheduled start's commands are
// read on a thread of their own. Internal.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <optional>

#include "job_profile.hpp"
#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/job_slot.hpp"
#include "loadlab/agent/usage_window.hpp"

namespace loadlab::agent {

class LoadJob {
 public:
  using Stream = grpc::ServerReaderWriterInterface<v1::LoadEvent, v1::LoadCommand>;
  LoadJob(const AgentOptions& options, ProcFsReader& proc, grpc::ServerContext* ctx, Stream* stream)
      : options_(options), proc_(proc), ctx_(ctx), stream_(stream) {}

  grpc::Status run(const v1::LoadSpec& spec, JobLease& lease);

 private:
  grpc::Status relay_events(JobLease& lease);
  grpc::Status on_line(const std::string& line);
  grpc::Status finish();
  // A scheduled start: the controller's commands after the spec (ClockProbe, StartAt) until
  // it half-closes the stream. Runs on its own thread.
  void read_commands();
  bool write(const v1::LoadEvent& ev);  // from either thread
  int64_t now_ns() const;               // this agent's monotonic clock, as it reports it

  const AgentOptions& options_;
  ProcFsReader& proc_;
  grpc::ServerContext* ctx_;
  Stream* stream_;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<UsageWindow> window_;
  std::unique_ptr<JobProfile> profile_;  // LoadSpec.profile: over the window, its start to the result
  bool have_result_ = false;
  std::optional<v1::Usage> client_usage_;
  std::mutex write_mutex_;
  bool scheduled_ = false;  // the usage window opens at StartAt's instant, not at MeasureStart
};

}  // namespace loadlab::agent
