#pragma once
// The lab's agents as the run sees them: connected, described (Describe), and chosen for
// each attempt of a cell. Called from the run's thread.
#include <grpcpp/channel.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lab/lab.hpp"
#include "lab/placement.hpp"
#include "loadlab/v1/agent.grpc.pb.h"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

// The client end of one agent: its stub, and the channel under it (null for a test's fake).
struct AgentStub {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Agent::StubInterface> stub;
};
// Makes the client end for the agent `def` names: grpc_stub, or a test's fake agents.
using StubFactory = std::function<AgentStub(const AgentDef& def)>;
// A channel to def.address with keepalive, so that a vanished agent is noticed; over TLS
// and with the token when def.credentials has them.
AgentStub grpc_stub(const AgentDef& def);

// One agent of the lab, as its Describe found it.
struct ConnectedAgent {
  AgentDef def;
  AgentStub client;
  v1::AgentInfo info;
  std::string error;  // why it is unusable; "" when it answered
  bool reachable() const { return error.empty(); }
  bool can_host(const std::string& target) const;
  // An agent of an older version lists no clients: it runs the built-in one.
  bool runs_client(const std::string& client) const;
  // The protocols (names: "http1", "https", ...) the agent's target `target` serves, and
  // its client `client` speaks; an agent that does not say (an older one): http1.
  std::vector<std::string> target_protocols(const std::string& target) const;
  std::vector<std::string> client_protocols(const std::string& client) const;
  AgentRef ref() const {
    return {def.name,        client.stub.get(),   info.cores(),
            info.hostname(), info.allowed_cpus(), info.scheduled_start()};
  }
  // True when it answers Describe within `deadline`.
  bool answers(std::chrono::milliseconds deadline) const;
};

class AgentPool {
 public:
  explicit AgentPool(StubFactory factory = grpc_stub) : factory_(std::move(factory)) {}

  // Connects to `def` and asks for its Describe, waiting up to `timeout_s` for it to come
  // up. An agent that does not answer is kept, with its error.
  const ConnectedAgent& add(const AgentDef& def, double timeout_s);
  const std::vector<std::unique_ptr<ConnectedAgent>>& agents() const { return agents_; }

  // Before any cell runs: every target of `s` has a reachable agent with the target role
  // that can host it, and a load agent that runs each client of the matrix to go with it,
  // both over each cell's protocol. Throws EnvironmentError, or InputError naming the JSON
  // path of the target, client or protocol that no agent serves (and the cell).
  void check(const Scenario& s) const;
  // After check(): each target built from a commit gets the sha its ref names now
  // (TargetDef.commit_sha and commit_subject), asked once of an agent that hosts it
  // (ResolveCommit). Throws InputError at /targets/N/commit for a ref that names no commit,
  // EnvironmentError when no agent could answer. (target_commits.cpp)
  void resolve_commits(Scenario& s) const;
  // What `ref` names in the repository of s.targets[target] (and with `since`, the first-parent
  // range between), asked of the agents that host it in turn. InputError at `at` for a ref that
  // names no commit; EnvironmentError when none could answer.
  v1::ResolvedCommit resolve_commit(const Scenario& s, size_t target, const std::string& ref,
                                    const std::string& since, const std::string& at) const;
  // The agents of attempt `attempt` at `cell`: eligible target agents that host its target
  // over its protocol, then load agents whose client speaks it, rotated by `attempt` so
  // that a retry goes to another agent when the lab has one. Throws EnvironmentError when
  // none is eligible.
  Placement place(const Scenario& s, const Cell& cell, uint32_t attempt) const;
  // The CPU sets of `p`'s sides (Placement.target_cpus, load_cpus) from `def`: kSets as given;
  // kAuto splits the CPUs of a machine that hosts the target and load between them (the
  // first half, at least one, for the target; the rest for the load; the same one CPU for
  // both on a one-CPU machine) and pins nothing elsewhere; kNone pins nothing.
  static void cpu_sets(const PlacementDef& def, Placement& p);
  // True when every agent of `p` answers, each within `deadline`.
  bool answer(const Placement& p, std::chrono::milliseconds deadline) const;

  std::map<std::string, uint32_t> cores() const;  // by agent name, from Describe
  nlohmann::json to_json() const;                 // the agents of result.json

 private:
  // The one eligibility check: reachable, with `role` and every one of `labels`.
  std::vector<const ConnectedAgent*> eligible(
      const std::string& role, const std::vector<std::pair<std::string, std::string>>& labels) const;
  void check_protocols(const Scenario& s) const;  // the part of check() for each cell's protocol
  void check_cpus(const Scenario& s) const;       // the part of check() for placement.cpus
  void check_commits(const Scenario& s) const;    // a commit for each target built from one, none else
  // Eligible agents that host `target` (runs `client`), over `protocol` unless it is "".
  std::vector<const ConnectedAgent*> target_agents(const Scenario& s, const std::string& target,
                                                   const std::string& protocol = "") const;
  [[nodiscard]] std::vector<const ConnectedAgent*> load_agents(const Scenario& s, const std::string& client,
                                                               const std::string& protocol = "") const;

  StubFactory factory_;
  std::vector<std::unique_ptr<ConnectedAgent>> agents_;
};

}  // namespace loadlab::controller
