#pragma once
// One RunLoad stream served by an external client (wrk, hey, h2load; the catalog's
// "clients"): the spec becomes the tool's command line (agent/external_tools), the tool runs as a
// job like loadlab-load does (own process group or cgroup, measured, stopped with the
// stream), and its printed report becomes the Result. The tools have no warm-up and print
// nothing until they end, so MeasureStart is sent when the tool starts and Result when it
// has exited: the client's usage window is the tool's whole life, the server's spans it.
// Internal.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "job_profile.hpp"
#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/catalog.hpp"
#include "loadlab/agent/job_slot.hpp"
#include "loadlab/agent/usage_window.hpp"

namespace loadlab::agent {

class ExternalLoadJob {
 public:
  using Stream = grpc::ServerReaderWriterInterface<v1::LoadEvent, v1::LoadCommand>;
  ExternalLoadJob(const AgentOptions& options, ProcFsReader& proc, grpc::ServerContext* ctx, Stream* stream)
      : options_(options), proc_(proc), ctx_(ctx), stream_(stream) {}

  // `spec` passed clients::check_spec for `client.tool`.
  grpc::Status run(const v1::LoadSpec& spec, const ClientEntry& client, JobLease& lease);

 private:
  grpc::Status launch(const std::vector<std::string>& argv, const std::string& cpus);
  grpc::Status collect_output(JobLease& lease);
  grpc::Status report(const v1::LoadSpec& spec, const ClientEntry& client);
  bool write(const v1::LoadEvent& ev);

  static constexpr size_t kMaxOutputBytes = 4 << 20;  // hey's and wrk's reports are a few KiB
  const AgentOptions& options_;
  ProcFsReader& proc_;
  grpc::ServerContext* ctx_;
  Stream* stream_;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<UsageWindow> window_;
  std::unique_ptr<JobProfile> profile_;  // LoadSpec.profile: over the tool's life
  std::string stdout_;
};

}  // namespace loadlab::agent
