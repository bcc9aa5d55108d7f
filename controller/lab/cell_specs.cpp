#include "lab/cell_specs.hpp"

#include <algorithm>

#include "loadlab/proto/protocols.hpp"

namespace loadlab::controller {

std::vector<LoadShare> split_load(const Scenario& s, const Cell& c, size_t agents) {
  size_t n = std::max<size_t>(1, std::min<size_t>(agents, c.threads));
  std::vector<LoadShare> shares(n);
  for (size_t i = 0; i < n; ++i) {
    shares[i].threads = static_cast<uint32_t>(c.threads / n + (i < c.threads % n ? 1 : 0));
  }
  // Connections follow the threads: each share gets its threads' part, the last the rest.
  uint32_t given_connections = 0;
  for (size_t i = 0; i < n; ++i) {
    shares[i].connections =
        i + 1 == n ? c.connections - given_connections
                   : static_cast<uint32_t>(uint64_t{c.connections} * shares[i].threads / c.threads);
    given_connections += shares[i].connections;
  }
  if (s.load.total_requests) {
    uint64_t total = *s.load.total_requests, given = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t part = i + 1 == n ? total - given : total * shares[i].threads / c.threads;
      shares[i].total_requests = part;
      given += part;
    }
  }
  return shares;
}

v1::TargetSpec target_spec(const Scenario& s, const Cell& c) {
  const auto& t = s.targets[c.target_index];
  v1::TargetSpec spec;
  if (!t.builtin.empty())
    spec.set_builtin(t.builtin);
  else
    spec.set_catalog(t.catalog);
  spec.set_commit(t.commit_sha);  // resolved when the run started
  spec.set_delay_ms(c.delay_ms);
  spec.set_threads(c.server_threads);
  spec.set_body(t.body);
  if (c.body_size) spec.set_body_size(*c.body_size);
  spec.set_protocol(*proto::protocol_from_name(c.protocol));
  // Counters count over the measured window itself; callgrind only in its own probes.
  if (c.instructions == InstructionsMethod::kCounters) spec.set_instructions(v1::INSTRUCTIONS_COUNTERS);
  if (c.profile) *spec.mutable_profile() = profile_spec(*c.profile);
  return spec;
}

v1::ProfileSpec profile_spec(const ProfileSetting& setting) {
  v1::ProfileSpec spec;
  spec.set_frequency_hz(setting.frequency_hz);
  spec.set_call_graph(setting.call_graph);
  return spec;
}

v1::LoadSpec load_spec(const Scenario& s, const Cell& c, const LoadShare& share,
                       const std::string& endpoint) {
  const auto& l = s.load;
  v1::LoadSpec spec;
  spec.set_endpoint(endpoint);
  spec.set_path(l.path);
  spec.set_method(l.method);
  for (auto& [k, v] : l.headers) (*spec.mutable_headers())[k] = v;
  spec.set_body(l.body);
  spec.set_threads(share.threads);
  spec.set_connections(share.connections);
  if (c.window_s) {
    spec.set_duration_s(*c.window_s);  // a search step's window
  } else {
    if (l.requests_per_thread) spec.set_requests_per_thread(*l.requests_per_thread);
    if (share.total_requests) spec.set_total_requests(*share.total_requests);
    if (l.duration_s) spec.set_duration_s(*l.duration_s);
  }
  spec.set_warmup_s(l.warmup_s);
  spec.set_keep_alive(c.keep_alive);
  spec.set_timeout_ms(l.timeout_ms);
  // The cell's rate is shared by its load agents in proportion to their threads.
  if (c.rate > 0) spec.set_rate(c.rate * share.threads / c.threads);
  spec.set_client(c.client == kBuiltinClient ? "" : c.client);
  spec.set_protocol(*proto::protocol_from_name(c.protocol));
  spec.set_tls_version(c.tls_version);
  if (!c.tls_version.empty()) spec.set_tls_resume(l.tls_resume);
  if (c.protocol == "h3") spec.set_zero_rtt(l.zero_rtt);
  if (c.streams > 1) spec.set_streams(c.streams);
  if (c.rate > 0 && c.arrivals == proto::kPoissonArrivals) {
    spec.set_arrivals(c.arrivals);
    spec.set_seed(c.seed);
  }
  if (c.rate > 0) spec.set_pace_granularity_us(c.pace_granularity_us);
  if (c.profile) *spec.mutable_profile() = profile_spec(*c.profile);
  return spec;
}

}  // namespace loadlab::controller
