#include "scenario/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <stdexcept>

#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/cpu_list.hpp"
#include "loadlab/shared/git_command.hpp"
#include "loadlab/shared/http_syntax.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/limits.hpp"
#include "scenario/plan.hpp"

namespace loadlab::controller {

const std::vector<std::string>& slo_figures() {
  static const std::vector<std::string> all = {"p50_ms",  "p90_ms", "p99_ms",
                                               "p999_ms", "max_ms", "errors_pct"};
  return all;
}

namespace fs = std::filesystem;

namespace {

constexpr const char* kBuiltins[] = {"hello"};

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

// A client is named like a catalog entry: letters, digits, '.', '_', '-'.
void check_client_name(const std::string& name, const std::string& path) {
  bool ok = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), is_name_char);
  if (!ok)
    throw InputError(path,
                     "must be \"loadlab\" (the built-in client) or an agent catalog client's name "
                     "(letters, digits, '.', '_', '-'), got \"" +
                         name + "\"");
}

// A protocol's name (loadlab/proto/protocols.hpp), as the value at `path`.
std::string protocol_value(const nlohmann::json& v, const std::string& path) {
  if (v.is_string() && proto::protocol_from_name(v.get<std::string>())) return v.get<std::string>();
  throw InputError(path, "must be one of " + proto::protocol_names() + ", got " + v.dump());
}

std::string tls_version_value(const nlohmann::json& v, const std::string& path) {
  if (v.is_string() && proto::is_tls_version(v.get<std::string>())) return v.get<std::string>();
  throw InputError(path, "must be \"1.2\" or \"1.3\" (the TLS version the client forces), got " + v.dump());
}

std::string number_text(double v) { return fmt::format("{:.15g}", v); }

TargetDef parse_target(const ObjectReader& t) {
  t.allow({"name", "builtin", "catalog", "body", "body_size", "server_threads", "delay_ms", "commit"});
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
  if (t.has("commit")) {
    // The catalog entry names the repository and the build; the scenario only the commit.
    if (d.catalog.empty())
      throw InputError(t.path("commit"), "only a catalog target built from a commit takes one");
    d.commit = t.string("commit");
    if (auto why = ref_problem(d.commit); !why.empty()) throw InputError(t.path("commit"), why);
  }
  d.body = t.string("body", "");
  if (t.has("body_size")) {
    if (t.has("body")) throw InputError(t.path("body_size"), "give at most one of body and body_size");
    d.body_size = static_cast<uint64_t>(t.integer("body_size", 0, limits::kMaxResponseBodyBytes));
  }
  d.server_threads = static_cast<uint32_t>(t.integer("server_threads", 0, limits::kMaxServerThreads, 0));
  d.delay_ms = static_cast<uint32_t>(t.integer("delay_ms", 0, limits::kMaxDelayMs, 0));
  return d;
}

// How the load stops: exactly one of a request count per thread, a total request count or a
// duration; none in a search, whose steps have windows of their own.
void parse_load_stop(const ObjectReader& l, LoadDef& d, bool searched) {
  int stops = l.has("requests_per_thread") + l.has("total_requests") + l.has("duration_s");
  if (searched) {
    for (const char* k : {"requests_per_thread", "total_requests", "duration_s"})
      if (l.has(k))
        throw InputError(l.path(k),
                         "a search measures each step for its own window (/search/step_s, "
                         "/search/min_requests, /search/validate_s): give no stop condition");
    return;
  }
  if (stops != 1)
    throw InputError(l.where(),
                     "exactly one of requests_per_thread, total_requests or duration_s is required");
  if (l.has("requests_per_thread"))
    d.requests_per_thread = static_cast<uint64_t>(l.integer("requests_per_thread", 1, limits::kMaxRequests));
  if (l.has("total_requests"))
    d.total_requests = static_cast<uint64_t>(l.integer("total_requests", 1, limits::kMaxRequests));
  if (l.has("duration_s")) d.duration_s = l.number("duration_s", 0.001, limits::kMaxDurationS);
}

// The load's threads and connections: per thread, or a total (at most one of the two).
void parse_load_connections(const ObjectReader& l, LoadDef& d) {
  d.threads = static_cast<uint32_t>(l.integer("threads", 1, limits::kMaxThreads, 1));
  d.connections_per_thread =
      static_cast<uint32_t>(l.integer("connections_per_thread", 1, limits::kMaxConnectionsPerThread, 1));
  if (l.has("connections")) {
    if (l.has("connections_per_thread"))
      throw InputError(l.path("connections"), "give at most one of connections and connections_per_thread");
    d.connections = static_cast<uint32_t>(l.integer("connections", 1, limits::kMaxConnections));
  }
}

// The request's headers: valid names and values, each header named once (ignoring case).
std::vector<std::pair<std::string, std::string>> parse_load_headers(const ObjectReader& l) {
  auto headers = l.string_map("headers");
  for (auto& [k, v] : headers) {
    std::string at = l.path("headers") + "/" + pointer_token(k);
    if (!is_http_token(k)) throw InputError(at, "is not a valid header name (an HTTP token)");
    if (has_line_break(v)) throw InputError(at, "must not contain line breaks");
  }
  std::vector<std::string> header_names;
  for (auto& [k, v] : headers) header_names.push_back(k);
  if (auto same = same_header_names(header_names))
    throw InputError(l.path("headers") + "/" + pointer_token(same->second),
                     "names the same header as " + l.path("headers") + "/" + pointer_token(same->first) +
                         " (header names are compared ignoring case: give it once)");
  return headers;
}

// The request the load sends: method, path, headers and body.
void parse_load_request(const ObjectReader& l, LoadDef& d) {
  d.method = l.string("method", "GET");
  if (!is_http_token(d.method) || d.method.size() > static_cast<size_t>(limits::kMaxMethodLength))
    throw InputError(l.path("method"), "must be an HTTP method token (e.g. GET, POST) of at most " +
                                           std::to_string(limits::kMaxMethodLength) + " characters");
  d.path = l.string("path", "/");
  if (d.path.empty() || d.path[0] != '/' || d.path.find_first_of(" \r\n") != std::string::npos)
    throw InputError(l.path("path"), "must start with '/' and hold no spaces or line breaks");
  d.headers = parse_load_headers(l);
  d.body = l.string("body", "");
  if (d.body.size() > static_cast<size_t>(limits::kMaxBodyBytes))
    throw InputError(l.path("body"), "must be at most " + std::to_string(limits::kMaxBodyBytes) +
                                         " bytes, got " + std::to_string(d.body.size()));
}

// The protocol the load speaks: protocol, TLS version and resumption, 0-RTT and streams.
void parse_load_protocol(const ObjectReader& l, LoadDef& d) {
  if (l.has("protocol")) d.protocol = protocol_value(l.at("protocol"), l.path("protocol"));
  if (l.has("tls_version")) d.tls_version = tls_version_value(l.at("tls_version"), l.path("tls_version"));
  d.tls_resume = l.boolean("tls_resume", false);
  d.zero_rtt = l.boolean("zero_rtt", false);
  if (d.zero_rtt && !d.tls_resume)
    throw InputError(l.path("zero_rtt"), "needs tls_resume: true (0-RTT rides on a resumed session)");
  d.streams = static_cast<uint32_t>(l.integer("streams", 1, limits::kMaxStreams, 1));
}

std::string arrivals_value(const nlohmann::json& v, const std::string& path) {
  if (v.is_string() && proto::is_arrivals(v.get<std::string>())) return v.get<std::string>();
  throw InputError(path, "must be \"uniform\" (an even pace) or \"poisson\" (exponential gaps)");
}

// How an open loop's send times fall, and the seed of Poisson's draws.
void parse_load_arrivals(const ObjectReader& l, LoadDef& d) {
  if (l.has("arrivals")) d.arrivals = arrivals_value(l.at("arrivals"), l.path("arrivals"));
  d.pace_granularity_us = static_cast<uint32_t>(
      l.integer("pace_granularity_us", 0, static_cast<int64_t>(limits::kMaxPaceGranularityUs), 0));
  if (l.has("seed")) {
    const auto& v = l.at("seed");
    if (!v.is_number_unsigned())
      throw InputError(l.path("seed"), "must be an integer in 0..18446744073709551615 (2^64 - 1)");
    d.seed = v.get<uint64_t>();
  }
}

LoadDef parse_load(const ObjectReader& l, bool searched) {
  l.allow({"requests_per_thread",
           "total_requests",
           "duration_s",
           "threads",
           "connections_per_thread",
           "connections",
           "client",
           "warmup_s",
           "keep_alive",
           "method",
           "path",
           "headers",
           "body",
           "timeout_ms",
           "rate",
           "protocol",
           "tls_version",
           "tls_resume",
           "zero_rtt",
           "streams",
           "arrivals",
           "seed",
           "pace_granularity_us"});
  LoadDef d;
  parse_load_stop(l, d, searched);
  parse_load_connections(l, d);
  d.client = l.string("client", kBuiltinClient);
  check_client_name(d.client, l.path("client"));
  d.warmup_s = l.number("warmup_s", 0, limits::kMaxWarmupS, 0);
  d.keep_alive = l.boolean("keep_alive", true);
  parse_load_request(l, d);
  d.timeout_ms = static_cast<uint32_t>(l.integer("timeout_ms", 1, limits::kMaxTimeoutMs, 0));
  d.rate = l.number("rate", limits::kMinRatePerThread, limits::kMaxCellRate, 0);
  parse_load_protocol(l, d);
  parse_load_arrivals(l, d);
  return d;
}

// search: {"slo": {FIGURE: LIMIT, ...}, "rate": {"min": R, "max": R}, "precision_pct": P,
// "step_s": S, "min_requests": N, "validate_s": S, "max_threads": T, "max_connections": C}.
SearchDef parse_search(const ObjectReader& o) {
  o.allow({"slo", "rate", "precision_pct", "step_s", "min_requests", "validate_s", "max_threads",
           "max_connections"});
  SearchDef d;
  const ObjectReader slo = o.object("slo");
  std::string figures;
  for (const auto& f : slo_figures()) figures += (figures.empty() ? "" : ", ") + f;
  for (auto& [figure, limit] : slo.json().items()) {
    const std::string at = slo.path(figure.c_str());
    if (std::find(slo_figures().begin(), slo_figures().end(), figure) == slo_figures().end())
      throw InputError(at, "unknown objective; allowed: " + figures);
    const bool errors = figure == "errors_pct";
    const double most = errors ? 100.0 : static_cast<double>(limits::kMaxTimeoutMs);
    if (!limit.is_number() || !(limit.get<double>() > 0 || (errors && limit.get<double>() == 0)) ||
        limit.get<double>() > most)
      throw InputError(at, errors ? "must be a percentage of requests in 0..100"
                                  : "must be a latency in ms, more than 0 and at most " +
                                        std::to_string(limits::kMaxTimeoutMs));
    d.slo.push_back({figure, limit.get<double>()});
  }
  if (d.slo.empty()) throw InputError(o.path("slo"), "must name at least one objective: " + figures);
  // In slo_figures()' order (latencies first, then errors), whatever the file's: JSON objects
  // are read in their keys' order.
  auto rank = [](const std::string& f) { return std::find(slo_figures().begin(), slo_figures().end(), f); };
  std::sort(d.slo.begin(), d.slo.end(),
            [&](const auto& a, const auto& b) { return rank(a.figure) < rank(b.figure); });
  const ObjectReader rate = o.object("rate");
  rate.allow({"min", "max"});
  d.rate_min = rate.number("min", limits::kMinRatePerThread, limits::kMaxCellRate);
  d.rate_max = rate.number("max", limits::kMinRatePerThread, limits::kMaxCellRate);
  if (d.rate_max <= d.rate_min)
    throw InputError(rate.path("max"), "must be more than " + rate.path("min") + " (" +
                                           number_text(d.rate_min) + "), got " + number_text(d.rate_max));
  d.precision_pct = o.number("precision_pct", 0.1, 50, 2);
  d.step_s = o.number("step_s", 0.1, limits::kMaxDurationS, 5);
  d.min_requests = static_cast<uint64_t>(o.integer("min_requests", 1, limits::kMaxRequests, 20000));
  d.validate_s = o.number("validate_s", 0.1, limits::kMaxDurationS, 30);
  d.max_threads = static_cast<uint32_t>(o.integer("max_threads", 0, limits::kMaxThreads, 0));
  d.max_connections = static_cast<uint32_t>(o.integer("max_connections", 0, limits::kMaxConnections, 0));
  return d;
}

std::vector<std::pair<std::string, std::string>> parse_selector(const ObjectReader& o, std::string& role,
                                                                uint32_t* agents) {
  if (agents)
    o.allow({"role", "labels", "agents"});
  else
    o.allow({"role", "labels"});
  role = o.string("role", role);
  if (role != "target" && role != "load") throw InputError(o.path("role"), "must be \"target\" or \"load\"");
  if (agents) *agents = static_cast<uint32_t>(o.integer("agents", 1, limits::kMaxLoadAgents, 1));
  return o.string_map("labels");
}

// placement.cpus: "auto", "none", or {"target": LIST, "load": LIST}.
void parse_cpus(const ObjectReader& p, PlacementDef& d) {
  const auto& v = p.at("cpus");
  const std::string at = p.path("cpus");
  if (v.is_string()) {
    const auto mode = v.get<std::string>();
    if (mode != "auto" && mode != "none")
      throw InputError(
          at,
          "must be \"auto\", \"none\" or an object {\"target\": CPUS, \"load\": CPUS}, got \"" + mode + "\"");
    d.cpus = mode == "auto" ? PlacementDef::Cpus::kAuto : PlacementDef::Cpus::kNone;
    return;
  }
  if (!v.is_object())
    throw InputError(at, "must be \"auto\", \"none\" or an object {\"target\": CPUS, \"load\": CPUS}");
  auto c = p.object("cpus");
  c.allow({"target", "load"});
  d.cpus = PlacementDef::Cpus::kSets;
  for (auto [key, out] : {std::pair{"target", &d.target_cpus}, std::pair{"load", &d.load_cpus}}) {
    if (!c.has(key)) continue;
    *out = c.string(key, "");
    if (!CpuList::parse(*out))
      throw InputError(c.path(key),
                       "must be a list of CPUs such as \"0\", \"2-3\" or \"0,2\", got \"" + *out + "\"");
    *out = CpuList::parse(*out)->to_string();
  }
}

// `o`'s "cells": keys of the scenario's cells, each one of them; none (absent, or null as
// --set profile.cells=null writes it) = every cell.
std::vector<std::string> parse_cell_keys(const ObjectReader& o, const Scenario& s) {
  std::vector<std::string> out;
  if (!o.has("cells") || o.at("cells").is_null()) return out;
  const auto& cells = o.at("cells");
  if (!cells.is_array() || cells.empty())
    throw InputError(o.path("cells"), "must be a non-empty array of cell keys (as the matrix shows them)");
  for (size_t i = 0; i < cells.size(); ++i) {
    if (!cells[i].is_string())
      throw InputError(o.path("cells") + "/" + std::to_string(i), "must be a cell key (a string)");
    out.push_back(cells[i].get<std::string>());
  }
  std::set<std::string> keys;
  for_each_cell(s, [&](Cell& c, const std::vector<size_t>&) { keys.insert(c.key()); });
  for (size_t i = 0; i < out.size(); ++i)
    if (!keys.count(out[i]))
      throw InputError(
          o.path("cells") + "/" + std::to_string(i),
          "no cell \"" + out[i] + "\" in this scenario; its cells are like \"" + *keys.begin() + "\"");
  return out;
}

// "instructions": {"method", "requests": [LOW, HIGH], "rate", "cells": [KEY, ...]}; every cell it lists
// must be one of the scenario's (checked once the matrix is known).
InstructionsDef parse_instructions(const ObjectReader& o, const Scenario& s) {
  o.allow({"method", "requests", "rate", "cells"});
  InstructionsDef d;
  const std::string method = o.string("method", std::string(instructions_method_name(d.method)));
  const auto named = instructions_method_named(method);
  if (!named)
    throw InputError(o.path("method"),
                     "must be \"" + std::string(instructions_method_name(InstructionsMethod::kCallgrind)) +
                         "\" or \"" + std::string(instructions_method_name(InstructionsMethod::kCounters)) +
                         "\", got " + nlohmann::json(method).dump());
  d.method = *named;
  if (o.has("requests")) {
    const auto& r = o.at("requests");
    const auto max = static_cast<uint64_t>(limits::kMaxInstructionProbeRequests);
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_unsigned() || !r[1].is_number_unsigned() ||
        r[0].get<uint64_t>() < 1 || r[1].get<uint64_t>() <= r[0].get<uint64_t>() ||
        r[1].get<uint64_t>() > max)
      throw InputError(o.path("requests"), "must be [LOW, HIGH], integers with 1 <= LOW < HIGH <= " +
                                               std::to_string(max) + ", got " + r.dump());
    d.requests_low = r[0].get<uint64_t>();
    d.requests_high = r[1].get<uint64_t>();
  }
  d.rate = o.number("rate", 0, limits::kMaxInstructionProbeRate, d.rate);
  d.cells = parse_cell_keys(o, s);
  if (s.search) throw InputError(o.where(), "a capacity search (/search) counts no instructions");
  return d;
}

// "profile": {"frequency_hz", "call_graph", "cells": [KEY, ...]}.
ProfileDef parse_profile(const ObjectReader& o, const Scenario& s) {
  o.allow({"frequency_hz", "call_graph", "cells"});
  ProfileDef d;
  d.setting.frequency_hz =
      static_cast<uint32_t>(o.integer("frequency_hz", 1, limits::kMaxProfileHz, limits::kDefaultProfileHz));
  d.setting.call_graph = o.string("call_graph", "fp");
  if (d.setting.call_graph != "auto" && d.setting.call_graph != "fp" && d.setting.call_graph != "dwarf")
    throw InputError(o.path("call_graph"),
                     "must be \"auto\" (a probe chooses), \"fp\" (frame pointers) or \"dwarf\" (debug "
                     "information), got " +
                         nlohmann::json(d.setting.call_graph).dump());
  d.cells = parse_cell_keys(o, s);
  if (s.search)
    throw InputError(
        o.where(),
        "a capacity search (/search) is not profiled; profile its cells' rates in a run of its own");
  return d;
}

// "ab"'s "cells": keys of B's cells, each once.
void parse_ab_cells(const ObjectReader& ab, Scenario& s) {
  const auto& cells = ab.at("cells");
  if (!cells.is_array() || cells.empty())
    throw InputError(ab.path("cells"), "must be a non-empty array of keys of /ab/b's cells");
  std::set<std::string> keys;
  for_each_cell(s, [&](Cell& c, const std::vector<size_t>&) {
    if (c.target == s.ab_b) keys.insert(c.key());
  });
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string at = ab.path("cells") + "/" + std::to_string(i);
    if (!cells[i].is_string() || !keys.count(cells[i].get<std::string>()))
      throw InputError(at, "must be the key of a cell of target \"" + s.ab_b + "\", like \"" + *keys.begin() +
                               "\", got " + cells[i].dump());
    if (std::find(s.ab_cells.begin(), s.ab_cells.end(), cells[i]) != s.ab_cells.end())
      throw InputError(at, "names " + cells[i].dump() + " a second time");
    s.ab_cells.push_back(cells[i].get<std::string>());
  }
}

// "ab": {"a": TARGET, "b": TARGET, "cells": [KEY of B, ...]}, two different targets of the
// scenario, and which of B's cells are paired (all when none are named).
void parse_ab(const ObjectReader& ab, Scenario& s) {
  ab.allow({"a", "b", "cells"});
  std::string names;
  for (auto& t : s.targets) names += (names.empty() ? "" : ", ") + t.name;
  for (auto [key, out] : {std::pair{"a", &s.ab_a}, std::pair{"b", &s.ab_b}}) {
    *out = ab.string(key);
    if (std::none_of(s.targets.begin(), s.targets.end(), [&](auto& t) { return t.name == *out; }))
      throw InputError(ab.path(key), "no target named \"" + *out + "\"; the scenario's targets: " + names);
  }
  if (s.ab_a == s.ab_b)
    throw InputError(ab.path("b"), "must name another target than /ab/a (\"" + s.ab_a + "\")");
  if (ab.has("cells")) parse_ab_cells(ab, s);
}

PlacementDef parse_placement(const ObjectReader& p) {
  p.allow({"target", "load", "share_agents", "cpus"});
  PlacementDef d;
  if (p.has("target")) d.target_labels = parse_selector(p.object("target"), d.target_role, nullptr);
  if (p.has("load")) d.load_labels = parse_selector(p.object("load"), d.load_role, &d.load_agents);
  d.share_agents = p.boolean("share_agents", false);
  if (p.has("cpus")) parse_cpus(p, d);
  return d;
}

ExecutionDef parse_execution(const ObjectReader& e) {
  e.allow({"retries", "retry_backoff_s", "cooldown_s", "shuffle_seed", "deadlines", "confirm",
           "remeasure_disturbed", "remeasure_wait_s", "max_skew_ms"});
  ExecutionDef d;
  d.retries = static_cast<uint32_t>(e.integer("retries", 0, limits::kMaxRetries, 2));
  d.retry_backoff_s = e.number("retry_backoff_s", 0, limits::kMaxRetryBackoffS, d.retry_backoff_s);
  d.cooldown_s = e.number("cooldown_s", 0, limits::kMaxCooldownS, 0);
  if (e.has("shuffle_seed")) d.shuffle_seed = static_cast<uint64_t>(e.integer("shuffle_seed", 0, INT64_MAX));
  if (e.has("deadlines")) {
    auto dl = e.object("deadlines");
    dl.allow({"ready_s", "warmup_extra_s", "measure_s", "stop_s"});
    d.ready_s = dl.number("ready_s", limits::kMinDeadlineS, limits::kMaxReadyS, d.ready_s);
    d.warmup_extra_s =
        dl.number("warmup_extra_s", limits::kMinDeadlineS, limits::kMaxWarmupExtraS, d.warmup_extra_s);
    d.measure_s = dl.number("measure_s", limits::kMinDeadlineS, limits::kMaxMeasureS, 0);
    d.stop_s = dl.number("stop_s", limits::kMinDeadlineS, limits::kMaxStopS, d.stop_s);
  }
  if (e.has("confirm")) {
    // An integer (the repetitions), or {"repetitions": N, "every_cell": bool}.
    if (e.at("confirm").is_object()) {
      auto c = e.object("confirm");
      c.allow({"repetitions", "every_cell"});
      if (c.has("repetitions"))
        d.confirm = static_cast<uint32_t>(c.integer("repetitions", 0, limits::kMaxRepetitions, 0));
      d.confirm_every_cell = c.boolean("every_cell", false);
    } else {
      d.confirm = static_cast<uint32_t>(e.integer("confirm", 0, limits::kMaxRepetitions, 0));
    }
  }
  d.remeasure_disturbed = static_cast<uint32_t>(
      e.integer("remeasure_disturbed", 0, limits::kMaxRemeasures, d.remeasure_disturbed));
  d.remeasure_wait_s = e.number("remeasure_wait_s", 0, limits::kMaxRemeasureWaitS, d.remeasure_wait_s);
  if (e.has("max_skew_ms")) d.max_skew_ms = e.number("max_skew_ms", 0, limits::kMaxSkewMs, 0);
  return d;
}

std::string allowed_axes() {
  std::string all;
  for (auto& k : knobs()) all += (all.empty() ? "" : ", ") + std::string(k.name);
  return all;
}

// A non-empty array of distinct values of one axis, each checked by `check` (which returns
// the text keys show, or throws).
template <class Check>
MatrixAxis parse_axis(const ObjectReader& m, const KnobInfo& k, Check&& check) {
  MatrixAxis a{k.knob, k.name, {}, {}};
  const std::string at = m.path(k.name);
  const auto& arr = m.at(k.name);
  if (!arr.is_array() || arr.empty()) throw InputError(at, "must be a non-empty array");
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string text = check(arr[i], at + "/" + std::to_string(i));
    for (size_t j = 0; j < i; ++j)
      if (arr[j] == arr[i])
        throw InputError(at + "/" + std::to_string(i), "duplicate value " + arr[i].dump());
    a.values.push_back(arr[i]);
    a.texts.push_back(text);
  }
  return a;
}

MatrixAxis parse_matrix_axis(const ObjectReader& m, const KnobInfo& k) {
  auto integer = [&](int64_t min, int64_t max) {
    MatrixAxis a{k.knob, k.name, {}, {}};
    for (auto v : m.integers(k.name, min, max)) {
      a.values.emplace_back(v);
      a.texts.push_back(std::to_string(v));
    }
    return a;
  };
  switch (k.knob) {
    case Knob::kDelayMs:
      return integer(0, limits::kMaxDelayMs);
    case Knob::kThreads:
      return integer(1, limits::kMaxThreads);
    case Knob::kConnectionsPerThread:
      return integer(1, limits::kMaxConnectionsPerThread);
    case Knob::kConnections:
      return integer(1, limits::kMaxConnections);
    case Knob::kBodySize:
      return integer(0, limits::kMaxResponseBodyBytes);
    case Knob::kServerThreads:
      return integer(0, limits::kMaxServerThreads);
    case Knob::kRate:
      return parse_axis(m, k, [](const nlohmann::json& v, const std::string& at) {
        if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= limits::kMaxCellRate))
          throw InputError(at, "must be a number of requests per second in 0 (closed loop)..10^12");
        return number_text(v.get<double>());
      });
    case Knob::kKeepAlive:
      return parse_axis(m, k, [](const nlohmann::json& v, const std::string& at) {
        if (!v.is_boolean()) throw InputError(at, "must be true or false");
        return std::string(v.get<bool>() ? "1" : "0");
      });
    case Knob::kClient:
      return parse_axis(m, k, [](const nlohmann::json& v, const std::string& at) {
        if (!v.is_string()) throw InputError(at, "must be a client name");
        check_client_name(v.get<std::string>(), at);
        return v.get<std::string>();
      });
    case Knob::kProtocol:
      return parse_axis(m, k, protocol_value);
    case Knob::kTlsVersion:
      return parse_axis(m, k, tls_version_value);
    case Knob::kStreams:
      return integer(1, limits::kMaxStreams);
    case Knob::kArrivals:
      return parse_axis(m, k, arrivals_value);
    case Knob::kPaceGranularity:
      return integer(0, static_cast<int64_t>(limits::kMaxPaceGranularityUs));
  }
  throw std::logic_error("unhandled knob");
}

std::vector<MatrixAxis> parse_matrix(const ObjectReader& m, std::vector<std::string> order) {
  if (order.empty())
    for (auto& [name, values] : m.json().items()) order.push_back(name);
  std::vector<MatrixAxis> axes;
  for (auto& name : order) {
    const KnobInfo* k = find_knob(name);
    if (!k) throw InputError(m.path(name.c_str()), "unknown axis; allowed: " + allowed_axes());
    axes.push_back(parse_matrix_axis(m, *k));
  }
  auto has = [&](Knob k) {
    return std::any_of(axes.begin(), axes.end(), [k](auto& a) { return a.knob == k; });
  };
  if (has(Knob::kConnections) && has(Knob::kConnectionsPerThread))
    throw InputError(m.path("connections"),
                     "give at most one of the axes connections and connections_per_thread");
  return axes;
}

// A load's whole run, its warm-up and measured time together, is at most kMaxLoadRunS, as
// the agent's --max-duration-s caps it (a search's step runs for its window after the warm-up).
void check_run_time(const Scenario& s) {
  auto at_most = [&](const std::string& path, double measured_s) {
    if (s.load.warmup_s + measured_s <= limits::kMaxLoadRunS) return;
    throw InputError(
        path, number_text(measured_s) + " s with /load/warmup_s's " + number_text(s.load.warmup_s) +
                  " s is a run of " + number_text(measured_s + s.load.warmup_s) + " s, over the limit of " +
                  number_text(limits::kMaxLoadRunS) + " s for a load's warm-up and duration together");
  };
  if (s.load.duration_s) at_most("/load/duration_s", *s.load.duration_s);
  if (s.search) {
    at_most("/search/step_s", s.search->step_s);
    at_most("/search/validate_s", s.search->validate_s);
  }
}

// The number of cells, and what a search's matrix may not hold.
void check_matrix(const Scenario& s) {
  uint64_t cells = s.targets.size();
  for (auto& a : s.matrix) {
    cells *= a.values.size();
    if (cells > static_cast<uint64_t>(limits::kMaxCells))
      throw InputError("/matrix", "the targets times every axis make more than " +
                                      std::to_string(limits::kMaxCells) + " cells");
  }
  if (s.search) {
    for (auto& a : s.matrix)
      if (a.knob == Knob::kRate)
        throw InputError("/matrix/rate",
                         "cannot be an axis of a search: each cell's rate is what it finds, "
                         "between /search/rate/min and /search/rate/max");
    if (s.load.rate > 0)
      throw InputError("/load/rate", "a search sets each step's rate (/search/rate): give none");
  }
}

// A pacing granularity paces the built-in client's open loop, on one load agent: a cell over
// several opens one window on all of them at an instant (a scheduled start), and slots sent
// early before that instant would be counted as due in it.
void check_pace_granularity(const Scenario& s, const Cell& c, const std::function<std::string(Knob)>& path) {
  const std::string at = path(Knob::kPaceGranularity);
  if (c.rate == 0 && !s.search)
    throw InputError(
        at, "paces an open loop: the cell needs a rate (" + path(Knob::kRate) + "), got 0 (closed loop)");
  if (c.client != kBuiltinClient)
    throw InputError(at, "needs the built-in client (" + std::string(kBuiltinClient) + "): " + c.client +
                             " (" + path(Knob::kClient) + ") paces by its own timers");
  if (s.placement.load_agents > 1)
    throw InputError(at, "needs one load agent a cell (/placement/load/agents is " +
                             std::to_string(s.placement.load_agents) +
                             "): several start together at an instant, which paces slot by slot");
}

// Every cell's knobs together: what no single value shows (fewer connections than threads,
// a rate a thread cannot pace), named by the paths of the values that make the cell.
void check_cells(const Scenario& s) {
  check_matrix(s);
  const bool total_connections =
      s.load.connections ||
      std::any_of(s.matrix.begin(), s.matrix.end(), [](auto& a) { return a.knob == Knob::kConnections; });
  for_each_cell(s, [&](const Cell& c, const std::vector<size_t>& d) {
    auto path = [&](Knob k) { return knob_path(s, k, c.target_index, d); };
    const std::string at_threads =
        " (" + std::to_string(c.threads) + " threads at " + path(Knob::kThreads) + ")";
    const uint64_t most =
        std::min<uint64_t>(limits::kMaxConnections, uint64_t{c.threads} * limits::kMaxConnectionsPerThread);
    if (total_connections && (c.connections < c.threads || c.connections > most))
      throw InputError(path(Knob::kConnections), "must be " + std::to_string(c.threads) + ".." +
                                                     std::to_string(most) + " connections" + at_threads +
                                                     ", got " + std::to_string(c.connections));
    if (!total_connections && c.connections > static_cast<uint64_t>(limits::kMaxConnections))
      throw InputError(
          path(Knob::kConnectionsPerThread),
          "times the thread count must be at most " + std::to_string(limits::kMaxConnections) + at_threads);
    if (s.load.total_requests && *s.load.total_requests < c.threads)
      throw InputError("/load/total_requests", "must be at least the largest thread count" + at_threads);
    const double per_thread = c.rate / c.threads;
    if (c.rate > 0 && (per_thread < limits::kMinRatePerThread || per_thread > limits::kMaxRatePerThread)) {
      throw InputError(
          path(Knob::kRate),
          fmt::format("must be {:g}..{:g} requests per second per thread ({:g}..{:g} at {} threads), ",
                      limits::kMinRatePerThread, limits::kMaxRatePerThread,
                      limits::kMinRatePerThread * c.threads, limits::kMaxRatePerThread * c.threads,
                      c.threads) +
              path(Knob::kThreads));
    }
    if (c.streams > 1 && !proto::multiplexes(*proto::protocol_from_name(c.protocol)))
      throw InputError(path(Knob::kStreams),
                       "must be 1 over " + c.protocol + " (" + path(Knob::kProtocol) +
                           "): only h2, h2c and h3 carry several requests at once on a connection, got " +
                           std::to_string(c.streams));
    if (s.search && c.client != kBuiltinClient)
      throw InputError(path(Knob::kClient),
                       "a search needs the built-in client (" + std::string(kBuiltinClient) +
                           "), whose latency counts from the intended send times; got " + c.client);
    if (c.arrivals == proto::kPoissonArrivals && c.rate == 0 && !s.search)
      throw InputError(path(Knob::kArrivals), "poisson paces an open loop: the cell needs a rate (" +
                                                  path(Knob::kRate) + "), got 0 (closed loop)");
    if (c.arrivals == proto::kPoissonArrivals && c.client != kBuiltinClient)
      throw InputError(path(Knob::kArrivals), "poisson needs the built-in client (" +
                                                  std::string(kBuiltinClient) + "): " + c.client + " (" +
                                                  path(Knob::kClient) + ") paces evenly if at all");
    if (c.pace_granularity_us > 0) check_pace_granularity(s, c, path);
    if (c.protocol == "h3" && c.tls_version == "1.2")
      throw InputError(path(Knob::kTlsVersion), "must be 1.3 over h3 (" + path(Knob::kProtocol) +
                                                    "): QUIC runs over TLS 1.3 only, got 1.2");
    if (c.body_size && !s.targets[c.target_index].body.empty())
      throw InputError("/targets/" + std::to_string(c.target_index) + "/body",
                       "a target with a body takes no body_size (" + path(Knob::kBodySize) + ")");
  });
}

// regression.ab_last_good: one target built from a commit, no capacity search, and no A/B of
// the scenario's own but the one the nightly makes of it (run/last_good_ab.hpp).
void check_ab_last_good(const Scenario& s) {
  if (s.regression.ab_last_good == kAbLastGoodOff) return;
  const std::string at = "/regression/ab_last_good";
  if (s.search) throw InputError(at, "a capacity search (/search) makes no A/B");
  std::vector<const TargetDef*> built;
  for (auto& t : s.targets)
    if (!t.commit.empty() && t.name != s.ab_a) built.push_back(&t);
  if (built.size() != 1)
    throw InputError(at,
                     "needs exactly one target built from a commit (with \"commit\"), the one whose "
                     "last good build the nightly runs beside it; this scenario has " +
                         std::to_string(built.size()));
  const std::string a = last_good_target_name(built[0]->name);
  if (s.ab_a.empty() && std::any_of(s.targets.begin(), s.targets.end(), [&](auto& t) { return t.name == a; }))
    throw InputError(
        at, "names its last good build's target \"" + a + "\", which the scenario has already: rename it");
  if (!s.ab_a.empty() && (s.ab_b != built[0]->name || s.ab_a != a))
    throw InputError("/ab", "a scenario with " + at + " gets its A/B from the nightly (" +
                                last_good_target_name(built[0]->name) + " against " + built[0]->name +
                                "): it names none of its own");
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& j, const std::vector<std::string>& matrix_order) {
  ObjectReader root(j, "");
  root.allow({"name", "description", "targets", "matrix", "load", "repetitions", "placement", "execution",
              "regression", "ab", "search", "instructions", "profile"});
  Scenario s;
  s.source = j;
  s.name = root.string("name");
  if (!is_safe_name(s.name))
    throw InputError(root.path("name"), "must be 1.." + std::to_string(kMaxNameLength) +
                                            " letters, digits, '.', '_' or '-', not starting with '.' (it "
                                            "names the run folder), got " +
                                            nlohmann::json(s.name).dump());
  s.description = root.string("description", "");
  std::set<std::string> names;
  for (auto& t : root.objects("targets")) {
    s.targets.push_back(parse_target(t));
    if (!names.insert(s.targets.back().name).second)
      throw InputError(t.path("name"), "duplicate target name \"" + s.targets.back().name + "\"");
  }
  s.matrix = parse_matrix(root.object("matrix"), matrix_order);
  if (root.has("search")) s.search = parse_search(root.object("search"));
  s.load = parse_load(root.object("load"), s.search.has_value());
  if (root.has("placement")) s.placement = parse_placement(root.object("placement"));
  check_run_time(s);
  check_cells(s);
  s.repetitions = static_cast<uint32_t>(root.integer("repetitions", 1, limits::kMaxRepetitions, 1));
  if (root.has("execution")) s.execution = parse_execution(root.object("execution"));
  if (root.has("regression")) s.regression = parse_regression(root.object("regression"));
  if (root.has("ab")) parse_ab(root.object("ab"), s);
  if (root.has("instructions")) s.instructions = parse_instructions(root.object("instructions"), s);
  if (root.has("profile")) s.profile = parse_profile(root.object("profile"), s);
  // A search is judged by what it finds, unless the scenario says otherwise.
  if (s.search && !(root.has("regression") && root.at("regression").contains("metric")))
    s.regression.metric = "capacity";
  if (s.search && !s.ab_a.empty())
    throw InputError("/ab", "a scenario is a capacity search (/search) or an A/B run, not both");
  check_ab_last_good(s);
  return s;
}

std::string last_good_target_name(const std::string& target) { return target + ".last-good"; }

const TargetDef* last_good_ab_target(const Scenario& s) {
  if (s.regression.ab_last_good == kAbLastGoodOff) return nullptr;
  for (auto& t : s.targets)
    if (!t.commit.empty() && t.name != s.ab_a) return &t;
  return nullptr;
}

namespace {

// Sets the value an assignment "a.b.0.c=VALUE" names in `j`; array indices by number.
void apply_override(nlohmann::ordered_json& j, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set",
                     "must be PATH=VALUE with a dotted PATH (e.g. load.total_requests=5000000), got \"" +
                         assignment + "\"");
  const std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  // JSON, as strictly as a scenario file (nesting depth, duplicate keys); text that is not
  // JSON at all is a string (--set load.client=wrk).
  nlohmann::ordered_json value;
  try {
    value = parse_ordered_json_text(text, "--set");
  } catch (const InputError& e) {
    if (!e.path().empty()) throw InputError("--set", path + ": " + e.what());
    value = text;
  }
  nlohmann::ordered_json* at = &j;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw InputError("--set", "\"" + path + "\" has an empty part");
    if (at->is_array()) {
      char* end = nullptr;
      const unsigned long i = std::strtoul(key.c_str(), &end, 10);
      if (*end != '\0' || i >= at->size())
        throw InputError("--set", "\"" + key + "\" in " + path + " is not an index of that array (0.." +
                                      std::to_string(at->size()) + ")");
      at = &(*at)[i];
    } else if (at->is_object() || at->is_null()) {
      at = &(*at)[key];
    } else {
      throw InputError("--set",
                       path + ": \"" + key + "\" is inside a value that is neither an object nor an array");
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  *at = value;
}

}  // namespace

namespace {

// A scenario file with its includes merged in (parse_scenario_text).
class IncludeResolver {
 public:
  // `root`: include_root_of's; `named`: the operator named it (--include-root).
  IncludeResolver(std::string root, bool named) : root_(std::move(root)), named_(named) {}

  // The scenario file itself is read by the caller: it may be a pipe (loadlab run <(...)).
  nlohmann::ordered_json resolve(nlohmann::ordered_json top, const std::string& origin) {
    files_.push_back(origin);
    chain_.push_back(canonical(origin));
    return merged(std::move(top), origin, 0);
  }

  const std::vector<std::string>& files() const { return files_; }

  // An InputError of the merged scenario, in the file that wrote the value it names: the
  // last merged whose own keys hold that path (or the nearest object above it).
  InputError in_its_file(const InputError& e, const std::string& origin) const {
    std::string path = e.path();
    for (;;) {
      for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer)
        if (holds(layer->second, path)) return e.in_file(layer->first);
      const auto slash = path.rfind('/');
      if (slash == std::string::npos || path.empty()) return e.in_file(origin);
      path.resize(slash);
    }
  }

 private:
  static std::string canonical(const std::string& file) {
    std::error_code ec;
    auto c = fs::weakly_canonical(file, ec);
    return ec ? file : c.string();
  }

  static bool holds(const nlohmann::ordered_json& j, const std::string& path) {
    if (path.empty()) return false;  // every file "holds" the root: no information
    try {
      return j.contains(nlohmann::ordered_json::json_pointer(path));
    } catch (const nlohmann::json::exception&) {
      return false;  // not a pointer (an error about --set, say)
    }
  }

  // The paths `include` names, as written and relative to `file`'s folder.
  static std::vector<std::pair<std::string, std::string>> include_paths(const nlohmann::ordered_json& include,
                                                                        const std::string& file) {
    std::vector<nlohmann::ordered_json> items;
    if (include.is_array())
      items.assign(include.begin(), include.end());
    else
      items.push_back(include);
    if (items.empty())
      throw InputError("/include", "must be a file name or a non-empty array of file names").in_file(file);
    std::vector<std::pair<std::string, std::string>> paths;
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string where = include.is_array() ? "/include/" + std::to_string(i) : "/include";
      if (!items[i].is_string() || items[i].get<std::string>().empty())
        throw InputError(where,
                         "must be a scenario file name (relative to this file), got " + items[i].dump())
            .in_file(file);
      const fs::path name = items[i].get<std::string>();
      paths.emplace_back(name.string(),
                         (name.is_absolute() ? name : fs::path(file).parent_path() / name).string());
    }
    return paths;
  }

  // An included file: a regular file of at most kMaxScenarioFileBytes, holding an object.
  // `path` as the errors name it, `real` the same with its symlinks resolved, which is read:
  // the file checked to lie inside the root, whatever a link on the way points at later.
  static nlohmann::ordered_json read_included(const std::string& path, const std::string& real,
                                              const std::string& from, const std::string& where) {
    std::error_code ec;
    const auto status = fs::status(real, ec);
    std::string problem;
    if (!fs::exists(status))
      problem = "no such file";
    else if (!fs::is_regular_file(status))
      problem = "not a regular file";
    else if (fs::file_size(real, ec) > static_cast<uintmax_t>(limits::kMaxScenarioFileBytes))
      problem = "larger than " + std::to_string(limits::kMaxScenarioFileBytes >> 20) + " MiB";
    if (!problem.empty()) throw InputError(where, "cannot include " + path + ": " + problem).in_file(from);
    auto j = parse_ordered_json_text(read_text_file(real), path);
    if (!j.is_object())
      throw InputError("",
                       "an included scenario file must hold a JSON object, got " + std::string(j.type_name()))
          .in_file(path);
    return j;
  }

  nlohmann::ordered_json merged(nlohmann::ordered_json own, const std::string& file, int depth) {
    if (!own.is_object() || !own.contains("include")) {
      layers_.emplace_back(file, own);
      return own;
    }
    const auto paths = include_paths(own["include"], file);
    own.erase("include");
    if (depth >= limits::kMaxIncludeDepth)
      throw InputError("/include",
                       "includes nest more than " + std::to_string(limits::kMaxIncludeDepth) + " files deep")
          .in_file(file);
    auto base = nlohmann::ordered_json::object();
    for (size_t i = 0; i < paths.size(); ++i) {
      const std::string where = paths.size() > 1 ? "/include/" + std::to_string(i) : "/include";
      const auto& [written, path] = paths[i];
      const std::string canon = canonical(path);
      if (auto real = resolves_outside(canon, root_))
        throw InputError(where, "\"" + written + "\" resolves to " + *real + ", outside " +
                                    (named_ ? "the include root " + root_ + " (--include-root)"
                                            : "the scenario's root " + root_ +
                                                  " (an include must stay inside the folder of the "
                                                  "scenario; --include-root names another)"))
            .in_file(file);
      if (std::find(chain_.begin(), chain_.end(), canon) != chain_.end()) {
        std::string cycle;
        for (auto& f : chain_) cycle += f + " → ";
        throw InputError(where, "includes itself: " + cycle + canon).in_file(file);
      }
      if (files_.size() >= static_cast<size_t>(limits::kMaxScenarioFiles))
        throw InputError(where, "a scenario may read at most " + std::to_string(limits::kMaxScenarioFiles) +
                                    " files with its includes")
            .in_file(file);
      files_.push_back(path);
      auto included = read_included(path, canon, file, where);
      chain_.push_back(canon);
      base.merge_patch(merged(std::move(included), path, depth + 1));
      chain_.pop_back();
    }
    layers_.emplace_back(file, own);
    base.merge_patch(own);
    return base;
  }

  const std::string root_;  // every include resolves inside this folder
  const bool named_;
  std::vector<std::string> files_;
  std::vector<std::string> chain_;  // the files being merged, outermost first
  std::vector<std::pair<std::string, nlohmann::ordered_json>> layers_;  // each file's own keys, merge order
};

}  // namespace

std::string include_root_of(const std::string& origin, const std::string& include_root) {
  std::error_code ec;
  const fs::path folder =
      fs::absolute(include_root.empty() ? fs::path(origin).parent_path() : fs::path(include_root), ec);
  auto root = fs::weakly_canonical(folder, ec);
  root = (ec ? folder : root).lexically_normal();
  if (root.has_relative_path() && !root.has_filename()) root = root.parent_path();  // "DIR/": DIR
  return root.string();
}

std::optional<std::string> resolves_outside(const std::string& path, const std::string& root) {
  std::error_code ec;
  auto real = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) real = fs::absolute(path).lexically_normal();
  const auto relative = real.lexically_relative(root);
  if (!relative.empty() && *relative.begin() != "..") return std::nullopt;
  return real.string();
}

Scenario parse_scenario_text(const std::string& text, const std::string& origin,
                             const std::vector<std::string>& overrides, const std::string& include_root) {
  // nlohmann::json keeps an object's keys sorted; the matrix's order is the file's.
  IncludeResolver includes(include_root_of(origin, include_root), !include_root.empty());
  auto ordered = includes.resolve(parse_ordered_json_text(text, origin), origin);
  for (auto& o : overrides) apply_override(ordered, o);
  std::vector<std::string> order;
  if (ordered.is_object() && ordered.contains("matrix") && ordered["matrix"].is_object())
    for (auto& [name, values] : ordered["matrix"].items()) order.push_back(name);
  try {
    Scenario s = parse_scenario(nlohmann::json::parse(ordered.dump()), order);
    s.source_text = ordered.dump(2) + "\n";
    s.overrides = overrides;
    s.files = includes.files();
    return s;
  } catch (const InputError& e) {
    throw includes.in_its_file(e, origin);
  }
}

Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides,
                            const std::string& include_root) {
  return parse_scenario_text(read_text_file(path), path, overrides, include_root);
}

bool is_safe_name(const std::string& name) {
  return !name.empty() && name.size() <= kMaxNameLength && name[0] != '.' &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

const std::vector<KnobInfo>& knobs() {
  static const std::vector<KnobInfo> all = {
      {Knob::kDelayMs, "delay_ms", "d", "delay ms"},
      {Knob::kThreads, "threads", "t", "threads"},
      {Knob::kConnectionsPerThread, "connections_per_thread", "cpt", "conns/thread"},
      {Knob::kConnections, "connections", "c", "conns"},
      {Knob::kRate, "rate", "r", "rate"},
      {Knob::kBodySize, "body_size", "b", "body B"},
      {Knob::kServerThreads, "server_threads", "st", "srv threads"},
      {Knob::kKeepAlive, "keep_alive", "ka", "keep-alive"},
      {Knob::kClient, "client", "", "client"},
      {Knob::kProtocol, "protocol", "", "protocol"},
      {Knob::kTlsVersion, "tls_version", "tls", "TLS"},
      {Knob::kStreams, "streams", "s", "streams"},
      {Knob::kArrivals, "arrivals", "", "arrivals"},
      {Knob::kPaceGranularity, "pace_granularity_us", "pg", "pace us"},
  };
  return all;
}

const KnobInfo* find_knob(const std::string& name) {
  for (auto& k : knobs())
    if (name == k.name) return &k;
  return nullptr;
}

std::string knob_path(const Scenario& s, Knob knob, size_t target, const std::vector<size_t>& digits) {
  for (size_t i = 0; i < s.matrix.size(); ++i)
    if (s.matrix[i].knob == knob) return "/matrix/" + s.matrix[i].name + "/" + std::to_string(digits[i]);
  const std::string t = "/targets/" + std::to_string(target);
  switch (knob) {
    case Knob::kDelayMs:
      return t + "/delay_ms";
    case Knob::kBodySize:
      return t + "/body_size";
    case Knob::kServerThreads:
      return t + "/server_threads";
    case Knob::kThreads:
      return "/load/threads";
    case Knob::kConnectionsPerThread:
      return "/load/connections_per_thread";
    case Knob::kConnections:
      return "/load/connections";
    case Knob::kRate:
      return "/load/rate";
    case Knob::kKeepAlive:
      return "/load/keep_alive";
    case Knob::kClient:
      return "/load/client";
    case Knob::kProtocol:
      return "/load/protocol";
    case Knob::kTlsVersion:
      return "/load/tls_version";
    case Knob::kStreams:
      return "/load/streams";
    case Knob::kArrivals:
      return "/load/arrivals";
    case Knob::kPaceGranularity:
      return "/load/pace_granularity_us";
  }
  return "";
}

std::string_view instructions_method_name(InstructionsMethod m) {
  return m == InstructionsMethod::kCounters ? "counters" : "callgrind";
}

std::optional<InstructionsMethod> instructions_method_named(std::string_view name) {
  for (auto m : {InstructionsMethod::kCallgrind, InstructionsMethod::kCounters})
    if (instructions_method_name(m) == name) return m;
  return std::nullopt;
}

}  // namespace loadlab::controller
