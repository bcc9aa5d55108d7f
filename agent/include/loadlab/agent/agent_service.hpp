#pragma once
// The agent's gRPC service (synchronous API: each stream is served on its own gRPC thread)
// and a server wrapper used both by the loadlab-agent daemon and by the controller's
// embedded agent.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadlab/agent/agent_limits.hpp"
#include "loadlab/agent/build_cache.hpp"
#include "loadlab/agent/caller_auth.hpp"
#include "loadlab/agent/catalog.hpp"
#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/job_slot.hpp"
#include "loadlab/agent/job_user.hpp"
#include "loadlab/agent/load_destinations.hpp"
#include "loadlab/agent/proc_reader.hpp"
#include "loadlab/agent/target_spec_check.hpp"
#include "loadlab/metrics/exposition.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::agent {

struct AgentOptions {
  std::string name = "local";
  std::string bin_dir;  // holds loadlab-target and loadlab-load; "" = this executable's folder
  std::string target_host = "127.0.0.1";                // address targets bind and advertise
  int sample_interval_ms = 100;                         // RSS sampling period
  int stop_grace_ms = 2000;                             // SIGTERM → SIGKILL
  Catalog catalog;                                      // the targets this agent may run
  AgentLimits limits;                                   // what a job may ask for
  NetworkList allow_load_to = NetworkList::loopback();  // where its load may go
  std::string token_digest;  // SHA-256 of the token every call must carry (read_token_digest); "" = none
  bool insecure = false;     // serves a network without proving its callers: warned at every Describe
  std::optional<JobUser> job_user;  // jobs run as this user (--job-user); none: as the agent's
  // Targets built from a commit (--build-cache, --build-cache-mb): the cache's folder ("" =
  // default_build_cache_dir()) and its size cap.
  std::string build_cache_dir;
  int64_t build_cache_mb = limits::kDefaultBuildCacheMb;
  // Test knobs (hidden flags): an offset added to every instant of this agent's monotonic
  // clock it reports (ClockEcho, LoadReady, a window's times) and taken off every one it is
  // given (StartAt), as a machine whose clock differs would; and a delay before a scheduled
  // start's LoadReady is relayed, as a worker slow to warm up would.
  int64_t test_clock_offset_ns = 0;
  int test_ready_delay_ms = 0;
  std::string perf = "perf";  // the program that profiles jobs (--perf): a path, or a name on PATH
  // What profiling `perf` can do here: found by the service at its start (profiling_support),
  // not a flag.
  v1::ProfilingSupport profiling;
  const JobUser* job_user_or_null() const { return job_user ? &*job_user : nullptr; }
};

// The folder of the running executable (from /proc/self/exe).
std::string executable_dir();
// Where an agent keeps its builds unless told: /var/cache/loadlab/builds for root, else
// $XDG_CACHE_HOME (or ~/.cache)/loadlab/builds (the systemd unit's /var/cache/loadlab); the
// folders above it are made.
std::string default_build_cache_dir();

class AgentService final : public loadlab::v1::Agent::Service {
 public:
  explicit AgentService(AgentOptions options);

  grpc::Status Describe(grpc::ServerContext* ctx, const v1::DescribeRequest* req,
                        v1::AgentInfo* info) override;
  grpc::Status HostTarget(grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<v1::TargetEvent, v1::TargetCommand>* stream) override;
  grpc::Status RunLoad(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::LoadEvent, v1::LoadCommand>* stream) override;
  grpc::Status ResolveCommit(grpc::ServerContext* ctx, const v1::CommitQuery* query,
                             v1::ResolvedCommit* resolved) override;

  // The agent's metrics now (loadlab-agent --metrics-listen, docs/agent.md "Metrics"): its
  // build, its jobs by kind (running, started, failed), what the running ones use (their
  // process trees, read now), its calls ended by their deadlines, and refused callers.
  std::vector<metrics::Family> metrics();
  // A metrics request carries the token the agent requires (or none is required).
  bool authorizes(std::string_view authorization) const { return callers_.carries_token(authorization); }
  void count_metrics_refusal() { ++metrics_refusals_; }

 private:
  // The external client `spec` names (nullptr: the built-in loadlab-load), and whether it
  // can run the spec: NOT_FOUND for an unknown name, INVALID_ARGUMENT for what it cannot do.
  grpc::Status check_client(const v1::LoadSpec& spec, const ClientEntry** client) const;
  // A spec's commit against its entry: required for a target built from a commit, else none.
  static grpc::Status check_commit(const v1::TargetSpec& spec, const CatalogEntry& entry);
  std::chrono::milliseconds idle_timeout() const;

  AgentOptions options_;
  CallerCheck callers_;
  ProcFsReader proc_;
  std::unique_ptr<BuildCache> builds_;
  JobSlot target_slot_;
  JobSlot load_slot_;
  LeaseExpiries expiries_;
  std::atomic<uint64_t> metrics_refusals_{0};
};

class AgentServer {
 public:
  explicit AgentServer(AgentOptions options);
  ~AgentServer();
  // Binds `listen` (HOST:PORT, port 0 = any free port, or unix:PATH) and starts serving,
  // with TLS when `tls` names a certificate. Returns the bound address; throws
  // EnvironmentError if it cannot listen, InputError if a TLS file cannot be read.
  std::string start(const std::string& listen, const TlsFiles& tls = {});
  // Cancels running streams after `grace_ms` (their children are then stopped) and joins.
  void shutdown(int grace_ms = 1000);
  void wait();
  AgentService& service() { return service_; }

 private:
  AgentService service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace loadlab::agent
