#pragma once
// The agent's gRPC service (synchronous API: each stream is served on its own gRPC thread)
// and a server wrapper used both by the loadlab-agent daemon and by the controller's
// embedded agent.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "loadlab/agent/catalog.hpp"
#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/proc_reader.hpp"
#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::agent {

struct AgentOptions {
  std::string name = "local";
  std::string bin_dir;               // holds loadlab-target and loadlab-load; "" = this executable's folder
  std::string target_host = "127.0.0.1";  // address targets bind and advertise
  int sample_interval_ms = 100;      // RSS sampling period
  int stop_grace_ms = 2000;          // SIGTERM → SIGKILL
  Catalog catalog;                   // the targets this agent may run
};

// The folder of the running executable (from /proc/self/exe).
std::string executable_dir();

// One job of a kind at a time. A job whose stream has ended but whose child is still being
// stopped is "stopping": a new job waits for it (bounded) instead of being refused, so a
// controller that cancels a cell and starts the next one at once is not told "busy".
class JobSlot {
 public:
  // True if the slot was taken; waits up to `wait_for_stopping` while the holder is stopping.
  bool acquire(std::chrono::milliseconds wait_for_stopping);
  void mark_stopping();
  void release();
  bool busy() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool busy_ = false, stopping_ = false;
};

class AgentService final : public loadlab::v1::Agent::Service {
 public:
  explicit AgentService(AgentOptions options);

  grpc::Status Describe(grpc::ServerContext* ctx, const v1::DescribeRequest* req, v1::AgentInfo* info) override;
  grpc::Status HostTarget(grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<v1::TargetEvent, v1::TargetCommand>* stream) override;
  grpc::Status RunLoad(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::LoadEvent, v1::LoadCommand>* stream) override;

 private:
  // SIGTERM/SIGKILL to the child's group and to every descendant found before it.
  ExitStatus stop_tree(ChildProcess& child);

  AgentOptions options_;
  ProcFsReader proc_;
  JobSlot target_slot_;
  JobSlot load_slot_;
};

class AgentServer {
 public:
  explicit AgentServer(AgentOptions options);
  ~AgentServer();
  // Binds `listen` (HOST:PORT, port 0 = any free port, or unix:PATH) and starts serving.
  // Returns the bound address; throws std::runtime_error if it cannot listen.
  std::string start(const std::string& listen);
  // Cancels running streams after `grace_ms` (their children are then stopped) and joins.
  void shutdown(int grace_ms = 1000);
  void wait();

 private:
  AgentService service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace loadlab::agent
