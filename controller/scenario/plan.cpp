#include "scenario/plan.hpp"

#include <algorithm>
#include <set>

#include "loadlab/proto/protocols.hpp"

namespace loadlab::controller {

std::string Cell::key() const {
  std::string k = target;
  for (auto& [name, text] : axes) k += "/" + std::string(find_knob(name)->key_prefix) + text;
  return k;
}

namespace {

// The knobs a cell takes only once every axis is applied: its connections (a count per thread,
// or a total) and its TLS version (kept only for a protocol over TLS).
struct LateKnobs {
  uint32_t per_thread = 0;
  uint32_t total = 0;  // 0: threads × per_thread
  std::string tls_version;
};

// Sets the knob an axis varies to the value `v`: in the cell, or in `late`.
void set_knob(Knob knob, const nlohmann::json& v, Cell& c, LateKnobs& late) {
  switch (knob) {
    case Knob::kDelayMs:
      c.delay_ms = v.get<uint32_t>();
      break;
    case Knob::kThreads:
      c.threads = v.get<uint32_t>();
      break;
    case Knob::kConnectionsPerThread:
      late.per_thread = v.get<uint32_t>();
      late.total = 0;
      break;
    case Knob::kConnections:
      late.total = v.get<uint32_t>();
      break;
    case Knob::kRate:
      c.rate = v.get<double>();
      break;
    case Knob::kBodySize:
      c.body_size = v.get<uint64_t>();
      break;
    case Knob::kServerThreads:
      c.server_threads = v.get<uint32_t>();
      break;
    case Knob::kKeepAlive:
      c.keep_alive = v.get<bool>();
      break;
    case Knob::kClient:
      c.client = v.get<std::string>();
      break;
    case Knob::kProtocol:
      c.protocol = v.get<std::string>();
      break;
    case Knob::kTlsVersion:
      late.tls_version = v.get<std::string>();
      break;
    case Knob::kStreams:
      c.streams = v.get<uint32_t>();
      break;
    case Knob::kArrivals:
      c.arrivals = v.get<std::string>();
      break;
    case Knob::kPaceGranularity:
      c.pace_granularity_us = v.get<uint32_t>();
      break;
  }
}

}  // namespace

Cell make_cell(const Scenario& s, size_t t, const std::vector<size_t>& digits) {
  const auto& target = s.targets[t];
  const auto& load = s.load;
  Cell c;
  c.target_index = t;
  c.target = target.name;
  c.delay_ms = target.delay_ms;
  c.threads = load.threads;
  c.rate = load.rate;
  c.server_threads = target.server_threads;
  c.body_size = target.body_size;
  c.keep_alive = load.keep_alive;
  c.client = load.client;
  c.protocol = load.protocol;
  c.streams = load.streams;
  c.arrivals = load.arrivals;
  c.seed = load.seed;
  c.pace_granularity_us = load.pace_granularity_us;
  LateKnobs late;
  late.tls_version = load.tls_version;
  late.per_thread = load.connections_per_thread;
  late.total = load.connections.value_or(0);
  c.axes.reserve(s.matrix.size());
  for (size_t i = 0; i < s.matrix.size(); ++i) {
    const auto& axis = s.matrix[i];
    set_knob(axis.knob, axis.values[digits[i]], c, late);
    c.axes.emplace_back(axis.name, axis.texts[digits[i]]);
  }
  c.connections = late.total ? late.total : c.threads * late.per_thread;
  if (proto::uses_tls(*proto::protocol_from_name(c.protocol))) c.tls_version = late.tls_version;
  if (s.instructions) {
    const auto& listed = s.instructions->cells;
    if (listed.empty() || std::find(listed.begin(), listed.end(), c.key()) != listed.end())
      c.instructions = s.instructions->method;
  }
  if (s.profile) {
    // An A/B's cells go in pairs: both profiled, or neither (perf costs CPU).
    const auto& listed = s.profile->cells;
    const std::string key = c.key();
    std::string partner = key;
    if (!s.ab_a.empty() && c.target == s.ab_a) partner = s.ab_b + key.substr(s.ab_a.size());
    if (!s.ab_a.empty() && c.target == s.ab_b) partner = s.ab_a + key.substr(s.ab_b.size());
    if (listed.empty() || std::find(listed.begin(), listed.end(), key) != listed.end() ||
        std::find(listed.begin(), listed.end(), partner) != listed.end())
      c.profile = s.profile->setting;
  }
  return c;
}

std::vector<Cell> expand(const Scenario& s) {
  std::vector<Cell> cells;
  // With "ab"'s "cells", A's cells are those paired with one of them: B's key, A's target.
  std::set<std::string> paired;
  for (auto& key : s.ab_cells) paired.insert(s.ab_a + key.substr(s.ab_b.size()));
  for_each_cell(s, [&](Cell& c, const std::vector<size_t>&) {
    if (!paired.empty() && c.target == s.ab_a && !paired.count(c.key())) return;
    c.index = cells.size();
    cells.push_back(std::move(c));
  });
  return cells;
}

}  // namespace loadlab::controller
