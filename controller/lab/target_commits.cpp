// Targets built from a commit: the scenario names a ref, the agents' catalogs the repository
// and the build; the controller checks the two agree and resolves each ref once per run.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>

#include "lab/agent_pool.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/input_error.hpp"

namespace loadlab::controller {

namespace {

bool built_from_commit(const ConnectedAgent& a, const std::string& target) {
  const auto& list = a.info.source_targets();
  return std::find(list.begin(), list.end(), target) != list.end();
}

}  // namespace

void AgentPool::check_commits(const Scenario& s) const {
  for (size_t i = 0; i < s.targets.size(); ++i) {
    const auto& t = s.targets[i];
    if (t.catalog.empty()) continue;
    const std::string at = "/targets/" + std::to_string(i);
    for (const auto* a : target_agents(s, t.catalog)) {
      const bool built = built_from_commit(*a, t.catalog);
      if (built && t.commit.empty())
        throw InputError(at, "agent " + a->def.name + " builds \"" + t.catalog +
                                 "\" from a commit of its source: name one with \"commit\" (a branch, a tag "
                                 "or a sha)");
      if (!built && !t.commit.empty())
        throw InputError(at + "/commit", "agent " + a->def.name + "'s catalog entry \"" + t.catalog +
                                             "\" names no source: it is not built from a commit");
    }
  }
}

v1::ResolvedCommit AgentPool::resolve_commit(const Scenario& s, size_t target, const std::string& ref,
                                             const std::string& since, const std::string& at) const {
  const auto& t = s.targets.at(target);
  std::string why;
  for (const auto* a : target_agents(s, t.catalog)) {
    grpc::ClientContext ctx;
    // The agent fetches the repository first: a remote one may take a while.
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(11));
    v1::CommitQuery query;
    query.set_target(t.catalog);
    query.set_ref(ref);
    query.set_since(since);
    v1::ResolvedCommit resolved;
    auto st = a->client.stub->ResolveCommit(&ctx, query, &resolved);
    if (st.ok()) return resolved;
    if (st.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
      throw InputError(at, "agent " + a->def.name + ": " + st.error_message());
    why += "; agent " + a->def.name + ": " + st.error_message();
  }
  throw EnvironmentError("cannot resolve " + at + " \"" + ref + "\" of target " + t.name +
                         (why.empty() ? ": no agent hosts it" : why));
}

void AgentPool::resolve_commits(Scenario& s) const {
  for (size_t i = 0; i < s.targets.size(); ++i) {
    auto& t = s.targets[i];
    if (t.commit.empty()) continue;
    const auto resolved = resolve_commit(s, i, t.commit, "", "/targets/" + std::to_string(i) + "/commit");
    t.commit_sha = resolved.commit().sha();
    t.commit_subject = resolved.commit().subject();
  }
}

}  // namespace loadlab::controller
