#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/open_files.hpp"
#include "loadlab/shared/timing.hpp"

namespace loadlab::agent {

namespace {

// What anyone who reaches the port may make the server hold, from the limits table (and
// docs/security-design.md, "Limits and fairness"): a message over kAgentMaxReceiveBytes ends
// its call RESOURCE_EXHAUSTED before the service reads it; a connection opens at most
// kAgentMaxStreamsPerConnection calls at once; all calls together hold at most
// kAgentMemoryQuotaBytes of the transport's buffers and kAgentMaxThreads threads of the sync
// server (one a running call; a call past them is refused RESOURCE_EXHAUSTED).
void set_server_limits(grpc::ServerBuilder& builder) {
  builder.SetMaxReceiveMessageSize(limits::kAgentMaxReceiveBytes);
  builder.SetMaxSendMessageSize(limits::kAgentMaxSendBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits::kAgentMaxStreamsPerConnection);
  grpc::ResourceQuota quota("loadlab-agent");
  quota.Resize(static_cast<size_t>(limits::kAgentMemoryQuotaBytes));
  quota.SetMaxThreads(limits::kAgentMaxThreads);
  builder.SetResourceQuota(quota);
}

}  // namespace

AgentServer::AgentServer(AgentOptions options) : service_(std::move(options)) {}

AgentServer::~AgentServer() {
  if (server_) shutdown(0);
}

std::string AgentServer::start(const std::string& listen, const TlsFiles& tls) {
  // Targets and workers inherit the limit: a target at thousands of connections must not
  // measure the agent's soft limit of open files.
  if (auto why = raise_open_file_limit(); !why.empty())
    component_logger("agent")->warn("{}: jobs inherit it", why);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, server_credentials(tls), &port);
  builder.RegisterService(&service_);
  // A controller that vanished is noticed by keepalive pings: its streams are then
  // cancelled and their children stopped.
  // Two agents must never share a port: no SO_REUSEPORT.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, timing::kKeepaliveTimeMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, timing::kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             timing::kMinPingIntervalMs);
  set_server_limits(builder);
  server_ = builder.BuildAndStart();
  if (!server_ || (port == 0 && listen.rfind("unix:", 0) != 0))
    throw EnvironmentError("cannot listen on " + listen);
  if (listen.rfind("unix:", 0) == 0) return listen;
  auto ep = parse_endpoint(listen);
  return Endpoint{ep ? ep->host : "127.0.0.1", static_cast<uint16_t>(port)}.to_string();
}

void AgentServer::shutdown(int grace_ms) {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(grace_ms));
  server_->Wait();
  server_.reset();
}

void AgentServer::wait() {
  if (server_) server_->Wait();
}

}  // namespace loadlab::agent
