#include "loadlab/controller/scenario.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "loadlab/controller/compare.hpp"
#include "loadlab/shared/http_syntax.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::controller {

namespace {

constexpr const char* kBuiltins[] = {"hello"};

TargetDef parse_target(const ObjectReader& t) {
  t.allow({"name", "builtin", "catalog", "body", "server_threads"});
  TargetDef d;
  d.name = t.string("name");
  if (d.name.empty()) throw InputError(t.path("name"), "must not be empty");
  if (t.has("builtin") == t.has("catalog"))
    throw InputError(t.path("builtin"), "exactly one of \"builtin\" or \"catalog\" is required");
  if (t.has("builtin")) {
    d.builtin = t.string("builtin");
    bool known = false;
    for (auto* b : kBuiltins) known = known || d.builtin == b;
    if (!known)
      throw InputError(t.path("builtin"), "unknown built-in target \"" + d.builtin + "\"; allowed: hello");
  } else {
    d.catalog = t.string("catalog");
    if (d.catalog.empty()) throw InputError(t.path("catalog"), "must not be empty");
  }
  d.body = t.string("body", "");
  d.server_threads = static_cast<uint32_t>(t.integer("server_threads", 0, limits::kMaxServerThreads, 0));
  return d;
}

LoadDef parse_load(const ObjectReader& l) {
  l.allow({"requests_per_thread", "total_requests", "duration_s", "connections_per_thread", "warmup_s",
           "keep_alive", "method", "path", "headers", "body", "timeout_ms", "rate"});
  LoadDef d;
  int stops = l.has("requests_per_thread") + l.has("total_requests") + l.has("duration_s");
  if (stops != 1)
    throw InputError(l.where(),
                     "exactly one of requests_per_thread, total_requests or duration_s is required");
  if (l.has("requests_per_thread"))
    d.requests_per_thread = static_cast<uint64_t>(l.integer("requests_per_thread", 1, limits::kMaxRequests));
  if (l.has("total_requests"))
    d.total_requests = static_cast<uint64_t>(l.integer("total_requests", 1, limits::kMaxRequests));
  if (l.has("duration_s")) d.duration_s = l.number("duration_s", 0.001, limits::kMaxDurationS);
  d.connections_per_thread =
      static_cast<uint32_t>(l.integer("connections_per_thread", 1, limits::kMaxConnectionsPerThread, 1));
  d.warmup_s = l.number("warmup_s", 0, limits::kMaxWarmupS, 0);
  d.keep_alive = l.boolean("keep_alive", true);
  d.method = l.string("method", "GET");
  if (!is_http_token(d.method) || d.method.size() > static_cast<size_t>(limits::kMaxMethodLength))
    throw InputError(l.path("method"), "must be an HTTP method token (e.g. GET, POST) of at most " +
                                           std::to_string(limits::kMaxMethodLength) + " characters");
  d.path = l.string("path", "/");
  if (d.path.empty() || d.path[0] != '/' || d.path.find_first_of(" \r\n") != std::string::npos)
    throw InputError(l.path("path"), "must start with '/' and hold no spaces or line breaks");
  d.headers = l.string_map("headers");
  for (auto& [k, v] : d.headers) {
    std::string at = l.path("headers") + "/" + pointer_token(k);
    if (!is_http_token(k)) throw InputError(at, "is not a valid header name (an HTTP token)");
    if (has_line_break(v)) throw InputError(at, "must not contain line breaks");
  }
  d.body = l.string("body", "");
  if (d.body.size() > static_cast<size_t>(limits::kMaxBodyBytes))
    throw InputError(l.path("body"), "must be at most " + std::to_string(limits::kMaxBodyBytes) +
                                         " bytes, got " + std::to_string(d.body.size()));
  d.timeout_ms = static_cast<uint32_t>(l.integer("timeout_ms", 1, limits::kMaxTimeoutMs, 0));
  d.rate = l.number("rate", limits::kMinRatePerThread, 1e12, 0);
  return d;
}

// Each load thread paces rate / threads: every thread count of the matrix must leave it
// inside the worker's per-thread range.
void check_rate_per_thread(double rate, const std::vector<uint32_t>& threads) {
  for (size_t i = 0; i < threads.size(); ++i) {
    double per_thread = rate / threads[i];
    if (per_thread < limits::kMinRatePerThread || per_thread > limits::kMaxRatePerThread) {
      char range[160];
      std::snprintf(
          range, sizeof range, "must be %g..%g requests per second per thread (%g..%g at %u threads)",
          limits::kMinRatePerThread, limits::kMaxRatePerThread, limits::kMinRatePerThread * threads[i],
          limits::kMaxRatePerThread * threads[i], threads[i]);
      throw InputError("/load/rate", std::string(range) + ", /matrix/threads/" + std::to_string(i));
    }
  }
}

// The load's figures that depend on each cell's thread count: checked per thread count,
// so no cell reaches an agent that its worker would refuse.
void check_load_against_matrix(const Scenario& s) {
  for (size_t i = 0; i < s.threads.size(); ++i) {
    std::string at =
        " (" + std::to_string(s.threads[i]) + " threads at /matrix/threads/" + std::to_string(i) + ")";
    if (uint64_t{s.threads[i]} * s.load.connections_per_thread > uint64_t{limits::kMaxConnections})
      throw InputError("/load/connections_per_thread", "times the thread count must be at most " +
                                                           std::to_string(limits::kMaxConnections) + at);
    if (s.load.total_requests && *s.load.total_requests < s.threads[i])
      throw InputError("/load/total_requests", "must be at least the largest thread count" + at);
  }
  if (s.load.rate > 0) check_rate_per_thread(s.load.rate, s.threads);
}

std::vector<std::pair<std::string, std::string>> parse_selector(const ObjectReader& o, std::string& role,
                                                                uint32_t* agents) {
  if (agents)
    o.allow({"role", "labels", "agents"});
  else
    o.allow({"role", "labels"});
  role = o.string("role", role);
  if (role != "target" && role != "load") throw InputError(o.path("role"), "must be \"target\" or \"load\"");
  if (agents) *agents = static_cast<uint32_t>(o.integer("agents", 1, 1000, 1));
  return o.string_map("labels");
}

PlacementDef parse_placement(const ObjectReader& p) {
  p.allow({"target", "load", "share_agents"});
  PlacementDef d;
  if (p.has("target")) d.target_labels = parse_selector(p.object("target"), d.target_role, nullptr);
  if (p.has("load")) d.load_labels = parse_selector(p.object("load"), d.load_role, &d.load_agents);
  d.share_agents = p.boolean("share_agents", false);
  return d;
}

ExecutionDef parse_execution(const ObjectReader& e) {
  e.allow({"retries", "retry_backoff_s", "cooldown_s", "shuffle_seed", "deadlines"});
  ExecutionDef d;
  d.retries = static_cast<uint32_t>(e.integer("retries", 0, 100, 2));
  d.retry_backoff_s = e.number("retry_backoff_s", 0, 300, d.retry_backoff_s);
  d.cooldown_s = e.number("cooldown_s", 0, 3600, 0);
  if (e.has("shuffle_seed")) d.shuffle_seed = static_cast<uint64_t>(e.integer("shuffle_seed", 0, INT64_MAX));
  if (e.has("deadlines")) {
    auto dl = e.object("deadlines");
    dl.allow({"ready_s", "warmup_extra_s", "measure_s", "stop_s"});
    d.ready_s = dl.number("ready_s", 0.1, 86400, d.ready_s);
    d.warmup_extra_s = dl.number("warmup_extra_s", 0.1, 86400, d.warmup_extra_s);
    d.measure_s = dl.number("measure_s", 0.1, 7 * 86400, 0);
    d.stop_s = dl.number("stop_s", 0.1, 3600, d.stop_s);
  }
  return d;
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& j) {
  ObjectReader root(j, "");
  root.allow({"name", "description", "targets", "matrix", "load", "repetitions", "placement", "execution",
              "regression"});
  Scenario s;
  s.source = j;
  s.name = root.string("name");
  if (s.name.empty()) throw InputError(root.path("name"), "must not be empty");
  s.description = root.string("description", "");
  std::set<std::string> names;
  for (auto& t : root.objects("targets")) {
    s.targets.push_back(parse_target(t));
    if (!names.insert(s.targets.back().name).second)
      throw InputError(t.path("name"), "duplicate target name \"" + s.targets.back().name + "\"");
  }
  auto matrix = root.object("matrix");
  matrix.allow({"delay_ms", "threads"});
  for (auto v : matrix.integers("delay_ms", 0, limits::kMaxDelayMs))
    s.delay_ms.push_back(static_cast<uint32_t>(v));
  for (auto v : matrix.integers("threads", 1, limits::kMaxThreads))
    s.threads.push_back(static_cast<uint32_t>(v));
  s.load = parse_load(root.object("load"));
  check_load_against_matrix(s);
  s.repetitions = static_cast<uint32_t>(root.integer("repetitions", 1, 100, 1));
  if (root.has("placement")) s.placement = parse_placement(root.object("placement"));
  if (root.has("execution")) s.execution = parse_execution(root.object("execution"));
  if (root.has("regression")) {
    // Read by `loadlab compare` from the result's copy of the scenario.
    auto r = root.object("regression");
    r.allow({"metric", "threshold_pct"});
    std::string metric = r.string("metric", "qps");
    const auto& names = metric_names();
    if (std::find(names.begin(), names.end(), metric) == names.end()) {
      std::string all;
      for (auto& n : names) all += (all.empty() ? "" : ", ") + n;
      throw InputError(r.path("metric"), "unknown metric \"" + metric + "\"; allowed: " + all);
    }
    r.number("threshold_pct", 0, 1000, 5);
  }
  return s;
}

Scenario load_scenario_file(const std::string& path) { return parse_scenario(read_json_file(path)); }

}  // namespace loadlab::controller
