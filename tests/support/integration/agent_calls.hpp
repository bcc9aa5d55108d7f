#pragma once
// Calls to an agent over gRPC as the controller makes them, for tests that drive an agent
// directly: host a target, run a load, read the counts.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::testing {

using TargetStream = grpc::ClientReaderWriter<v1::TargetCommand, v1::TargetEvent>;

inline std::unique_ptr<v1::Agent::Stub> stub_for(const std::string& address,
                                                 const std::shared_ptr<grpc::ChannelCredentials>& creds) {
  return v1::Agent::NewStub(grpc::CreateChannel(address, creds));
}

// One HostTarget stream: opened, spec sent, Ready (or the stream's end) read.
struct Hosted {
  grpc::ClientContext ctx;
  std::unique_ptr<TargetStream> stream;
  std::string endpoint;
  pid_t pid = 0;
  Hosted(v1::Agent::Stub& stub, const v1::TargetSpec& spec, const std::string& token = "") {
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    stream = stub.HostTarget(&ctx);
    v1::TargetCommand cmd;
    *cmd.mutable_spec() = spec;
    stream->Write(cmd);
    for (v1::TargetEvent ev; endpoint.empty() && stream->Read(&ev);) {
      if (ev.has_started()) pid = ev.started().pid();
      if (ev.has_ready()) endpoint = ev.ready().endpoint();
    }
  }
  grpc::Status close() {
    stream->WritesDone();
    for (v1::TargetEvent ev; stream->Read(&ev);) {
    }
    return stream->Finish();
  }
};

struct LoadRun {
  grpc::Status status;
  uint64_t requests = 0;
};

// A whole RunLoad call: the spec, then every event to the stream's end (at most 60 s).
inline LoadRun run_load(v1::Agent::Stub& stub, const v1::LoadSpec& spec, const std::string& token = "") {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  auto stream = stub.RunLoad(&ctx);
  v1::LoadCommand cmd;
  *cmd.mutable_spec() = spec;
  stream->Write(cmd);
  stream->WritesDone();
  LoadRun out;
  for (v1::LoadEvent ev; stream->Read(&ev);)
    if (ev.has_result()) out.requests = ev.result().requests();
  out.status = stream->Finish();
  return out;
}

// A closed-loop load of `requests` requests over one keep-alive connection.
inline v1::LoadSpec load_to(const std::string& endpoint, uint64_t requests = 100) {
  v1::LoadSpec s;
  s.set_endpoint(endpoint);
  s.set_threads(1);
  s.set_total_requests(requests);
  s.set_keep_alive(true);
  return s;
}

}  // namespace loadlab::testing
