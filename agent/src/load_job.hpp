#pragma once
// One RunLoad stream: start loadlab-load for a validated spec, relay its LoadEvent lines,
// open the client's usage window at MeasureStart and close it at the Result, then send
// Usage. Runs on the gRPC thread that serves the stream. Internal.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>

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

  const AgentOptions& options_;
  ProcFsReader& proc_;
  grpc::ServerContext* ctx_;
  Stream* stream_;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<UsageWindow> window_;
  bool have_result_ = false;
  std::optional<v1::Usage> client_usage_;
};

}  // namespace loadlab::agent
