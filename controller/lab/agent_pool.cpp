#include "lab/agent_pool.hpp"

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_interceptor.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/errors.hpp"
#include "lab/tls_diagnosis.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/cpu_list.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/timing.hpp"

namespace loadlab::controller {

namespace {

const std::string& target_name(const TargetDef& t) { return t.builtin.empty() ? t.catalog : t.builtin; }

nlohmann::json describe_json(const v1::AgentInfo& info) {
  return nlohmann::json::parse(proto::to_json(info));
}

// Adds `authorization: Bearer TOKEN` to every call of a channel.
class BearerToken final : public grpc::experimental::Interceptor {
 public:
  explicit BearerToken(std::string header) : header_(std::move(header)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    if (m->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA))
      m->GetSendInitialMetadata()->emplace("authorization", header_);
    m->Proceed();
  }

 private:
  const std::string header_;
};

class BearerTokenFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenFactory(const std::string& token) : header_("Bearer " + token) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo*) override {
    return new BearerToken(header_);
  }

 private:
  std::string header_;
};

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const AgentDef& def) {
  const auto& c = def.credentials;
  if (c.ca_pem.empty()) return grpc::InsecureChannelCredentials();
  return grpc::SslCredentials({c.ca_pem, c.key_pem, c.cert_pem});
}

}  // namespace

AgentStub grpc_stub(const AgentDef& def) {
  grpc::ChannelArguments args;
  // Notice a vanished agent (killed, cable cut) within seconds instead of waiting forever.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, timing::kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, timing::kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetMaxReceiveMessageSize(limits::kAgentMaxSendBytes);  // what an agent may send
  AgentStub a;
  if (!def.credentials.server_name.empty()) args.SetSslTargetNameOverride(def.credentials.server_name);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  // The token goes over TLS, or stays on this machine; parse_lab refuses a lab that would
  // send it elsewhere in clear text, and this is the last edge it could cross.
  if (!def.credentials.token.empty() && (!def.credentials.ca_pem.empty() || is_loopback_address(def.address)))
    interceptors.push_back(std::make_unique<BearerTokenFactory>(def.credentials.token));
  a.channel = grpc::experimental::CreateCustomChannelWithInterceptors(def.address, channel_credentials(def),
                                                                      args, std::move(interceptors));
  a.stub = v1::Agent::NewStub(a.channel);
  return a;
}

bool ConnectedAgent::can_host(const std::string& target) const {
  return std::find(info.catalog().begin(), info.catalog().end(), target) != info.catalog().end();
}

bool ConnectedAgent::runs_client(const std::string& client) const {
  if (info.clients().empty()) return client == kBuiltinClient;
  return std::find(info.clients().begin(), info.clients().end(), client) != info.clients().end();
}

namespace {
// The names of a protocol set of AgentInfo; http1 where the agent says nothing (older ones).
std::vector<std::string> protocol_names_of(const google::protobuf::Map<std::string, v1::ProtocolSet>& sets,
                                           const std::string& key) {
  auto it = sets.find(key);
  if (sets.empty() || it == sets.end()) return {"http1"};
  std::vector<std::string> out;
  for (int p : it->second.protocols()) out.emplace_back(proto::protocol_name(static_cast<v1::Protocol>(p)));
  return out;
}

bool holds(const std::vector<std::string>& names, const std::string& name) {
  return name.empty() || std::find(names.begin(), names.end(), name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

std::vector<std::string> ConnectedAgent::target_protocols(const std::string& target) const {
  return protocol_names_of(info.target_protocols(), target);
}

std::vector<std::string> ConnectedAgent::client_protocols(const std::string& client) const {
  return protocol_names_of(info.client_protocols(), client);
}

bool ConnectedAgent::answers(std::chrono::milliseconds deadline) const {
  // The channel's reconnect backoff (1 s, growing to minutes) is reset first: an agent
  // restarted on the same port is seen at the next probe, and a probe of a refused port
  // fails at once.
  if (client.channel) grpc::experimental::ChannelResetConnectionBackoff(client.channel.get());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::AgentInfo ignored;
  return client.stub->Describe(&ctx, v1::DescribeRequest(), &ignored).ok();
}

const ConnectedAgent& AgentPool::add(const AgentDef& def, double timeout_s) {
  auto a = std::make_unique<ConnectedAgent>();
  a->def = def;
  a->client = factory_(def);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int>(timeout_s * 1000)));
  ctx.set_wait_for_ready(true);
  auto st = a->client.stub->Describe(&ctx, v1::DescribeRequest(), &a->info);
  if (!st.ok()) {
    // gRPC says "unavailable" or "deadline exceeded" for a refused handshake: name its cause.
    const auto tls = st.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                         ? diagnose_tls(def)
                         : std::nullopt;
    a->error =
        "cannot reach agent " + def.name + " at " + def.address + ": " + (tls ? *tls : st.error_message());
  } else if (a->info.version() != LOADLAB_VERSION || a->info.commit() != git_commit())
    // Allowed (a lab is upgraded one agent at a time), and recorded in result.json's agents.
    component_logger("controller")
        ->warn("agent {} runs loadlab {} (git {}), this controller {} (git {})", def.name, a->info.version(),
               a->info.commit().empty() ? "unknown" : a->info.commit(), LOADLAB_VERSION, git_commit());
  agents_.push_back(std::move(a));
  return *agents_.back();
}

std::vector<const ConnectedAgent*> AgentPool::eligible(
    const std::string& role, const std::vector<std::pair<std::string, std::string>>& labels) const {
  std::vector<const ConnectedAgent*> out;
  for (auto& a : agents_)
    if (a->reachable() && a->def.matches(role, labels)) out.push_back(a.get());
  return out;
}

std::vector<const ConnectedAgent*> AgentPool::target_agents(const Scenario& s, const std::string& target,
                                                            const std::string& protocol) const {
  auto out = eligible(s.placement.target_role, s.placement.target_labels);
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](auto* a) {
                             return !a->can_host(target) || !holds(a->target_protocols(target), protocol);
                           }),
            out.end());
  return out;
}

std::vector<const ConnectedAgent*> AgentPool::load_agents(const Scenario& s, const std::string& client,
                                                          const std::string& protocol) const {
  auto out = eligible(s.placement.load_role, s.placement.load_labels);
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](auto* a) {
                             return !a->runs_client(client) || !holds(a->client_protocols(client), protocol);
                           }),
            out.end());
  return out;
}

namespace {
// The clients of a scenario's cells, each with the JSON path of its first mention.
std::vector<std::pair<std::string, std::string>> clients_of(const Scenario& s) {
  for (auto& axis : s.matrix)
    if (axis.knob == Knob::kClient) {
      std::vector<std::pair<std::string, std::string>> out;
      for (size_t i = 0; i < axis.texts.size(); ++i)
        out.emplace_back(axis.texts[i], "/matrix/client/" + std::to_string(i));
      return out;
    }
  return {{s.load.client, "/load/client"}};
}
}  // namespace

void AgentPool::check(const Scenario& s) const {
  for (size_t i = 0; i < s.targets.size(); ++i) {
    const auto& t = s.targets[i];
    if (eligible(s.placement.target_role, s.placement.target_labels).empty()) {
      std::string why;
      for (auto& a : agents_) why += a->reachable() ? "" : "; " + a->error;
      throw EnvironmentError("no reachable agent with role " + s.placement.target_role + why);
    }
    if (target_agents(s, target_name(t)).empty()) {
      std::string list;
      for (auto& a : agents_)
        for (auto& k : a->info.catalog()) list += (list.empty() ? "" : ", ") + a->def.name + ":" + k;
      throw InputError("/targets/" + std::to_string(i) + (t.builtin.empty() ? "/catalog" : "/builtin"),
                       "no agent can host \"" + target_name(t) + "\"; known: " + list);
    }
  }
  for (auto& [client, path] : clients_of(s))
    if (load_agents(s, client).empty()) {
      std::string list;
      for (auto& a : eligible(s.placement.load_role, s.placement.load_labels))
        for (auto& c : a->info.clients()) list += (list.empty() ? "" : ", ") + a->def.name + ":" + c;
      throw InputError(path, "no load agent runs the client \"" + client +
                                 "\"; known: " + (list.empty() ? "loadlab" : list));
    }
  check_protocols(s);
  check_cpus(s);
  check_commits(s);
}

void AgentPool::check_cpus(const Scenario& s) const {
  if (s.placement.cpus != PlacementDef::Cpus::kSets) return;
  auto check = [&](const std::string& cpus, const std::string& role,
                   const std::vector<std::pair<std::string, std::string>>& labels, const char* side) {
    if (cpus.empty()) return;
    for (auto* a : eligible(role, labels)) {
      auto allowed = CpuList::parse(a->info.allowed_cpus());
      if (allowed && !CpuList::parse(cpus)->subset_of(*allowed))
        throw InputError(std::string("/placement/cpus/") + side,
                         "\"" + cpus + "\" is not within the CPUs agent " + a->def.name + " may use (" +
                             allowed->to_string() + ")");
    }
  };
  check(s.placement.target_cpus, s.placement.target_role, s.placement.target_labels, "target");
  check(s.placement.load_cpus, s.placement.load_role, s.placement.load_labels, "load");
}

void AgentPool::cpu_sets(const PlacementDef& def, Placement& p) {
  p.target_cpus.clear();
  p.load_cpus.assign(p.loads.size(), "");
  if (def.cpus == PlacementDef::Cpus::kNone) return;
  if (def.cpus == PlacementDef::Cpus::kSets) {
    p.target_cpus = def.target_cpus;
    for (auto& c : p.load_cpus) c = def.load_cpus;
    return;
  }
  // auto: only a machine that runs both sides is split.
  auto same_machine = [&](const AgentRef& load) {
    return load.name == p.target.name || (!load.hostname.empty() && load.hostname == p.target.hostname);
  };
  auto allowed = CpuList::parse(p.target.allowed_cpus);
  if (!allowed) return;  // an older agent: it cannot pin
  const auto& cpus = allowed->cpus();
  CpuList target, load;
  const size_t half = std::max<size_t>(1, cpus.size() / 2);
  for (size_t i = 0; i < cpus.size(); ++i) (i < half ? target : load).add(cpus[i]);
  if (load.empty()) load = target;  // one CPU: both on it
  bool shared = false;
  for (size_t i = 0; i < p.loads.size(); ++i)
    if (same_machine(p.loads[i])) {
      p.load_cpus[i] = load.to_string();
      shared = true;
    }
  if (shared) p.target_cpus = target.to_string();
}

void AgentPool::check_protocols(const Scenario& s) const {
  // Each (target, client, protocol) of the cells once: its first cell names it.
  std::set<std::tuple<size_t, std::string, std::string>> seen;
  for_each_cell(s, [&](const Cell& c, const std::vector<size_t>& digits) {
    if (!seen.emplace(c.target_index, c.client, c.protocol).second) return;
    const std::string name = target_name(s.targets[c.target_index]);
    const std::string at = knob_path(s, Knob::kProtocol, c.target_index, digits);
    auto offered = [&](const std::vector<const ConnectedAgent*>& agents, auto protocols) {
      std::string list;
      for (auto* a : agents) list += (list.empty() ? "" : "; ") + a->def.name + ": " + joined(protocols(a));
      return list;
    };
    if (target_agents(s, name, c.protocol).empty())
      throw InputError(
          at, "cell " + c.key() + ": no agent serves " + c.protocol + " with the target \"" + name + "\" (" +
                  offered(target_agents(s, name), [&](auto* a) { return a->target_protocols(name); }) + ")");
    if (load_agents(s, c.client, c.protocol).empty())
      throw InputError(
          at, "cell " + c.key() + ": no load agent's client \"" + c.client + "\" speaks " + c.protocol +
                  " (" +
                  offered(load_agents(s, c.client), [&](auto* a) { return a->client_protocols(c.client); }) +
                  ")");
    place(s, c, 0);  // fails now, not mid-run
  });
}

Placement AgentPool::place(const Scenario& s, const Cell& cell, uint32_t attempt) const {
  const std::string name = target_name(s.targets[cell.target_index]);
  const std::string& client = cell.client;
  auto targets = target_agents(s, name, cell.protocol);
  auto loads = load_agents(s, client, cell.protocol);
  const bool share = s.placement.share_agents || agents_.size() == 1;
  auto loads_beside = [&](const ConnectedAgent* target) {
    std::vector<const ConnectedAgent*> out;
    for (auto* l : loads)
      if (share || l != target) out.push_back(l);
    return out;
  };
  // Only target agents that leave at least one load agent can take the cell.
  std::vector<const ConnectedAgent*> usable;
  for (auto* a : targets)
    if (!loads_beside(a).empty()) usable.push_back(a);
  if (targets.empty())
    throw EnvironmentError("no reachable agent with role " + s.placement.target_role + " can host \"" + name +
                           "\"");
  if (usable.empty())
    throw EnvironmentError("no reachable agent with role " + s.placement.load_role +
                           " that runs the client " + client + ", other than the target's " +
                           targets[0]->def.name + " (set placement.share_agents to allow sharing)");
  Placement p;
  const ConnectedAgent* target = usable[attempt % usable.size()];
  p.target = target->ref();
  auto beside = loads_beside(target);
  size_t n = std::min<size_t>(s.placement.load_agents, beside.size());
  for (size_t i = 0; i < n; ++i) p.loads.push_back(beside[(attempt + i) % beside.size()]->ref());
  cpu_sets(s.placement, p);
  return p;
}

bool AgentPool::answer(const Placement& p, std::chrono::milliseconds deadline) const {
  auto answers = [&](const AgentRef& ref) {
    for (auto& a : agents_)
      if (a->client.stub.get() == ref.stub) return a->answers(deadline);
    return false;
  };
  return answers(p.target) && std::all_of(p.loads.begin(), p.loads.end(), answers);
}

std::map<std::string, uint32_t> AgentPool::cores() const {
  std::map<std::string, uint32_t> out;
  for (auto& a : agents_) out[a->def.name] = a->info.cores();
  return out;
}

nlohmann::json AgentPool::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (auto& a : agents_)
    out.push_back({{"name", a->def.name},
                   {"address", a->def.address},
                   {"roles", a->def.roles},
                   {"describe", a->reachable() ? describe_json(a->info) : nlohmann::json(nullptr)},
                   {"error", a->error}});
  return out;
}

}  // namespace loadlab::controller
