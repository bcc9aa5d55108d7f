#include "results/results.hpp"

#include <algorithm>
#include <stdexcept>

#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/folded_stacks.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::controller {

size_t CellResult::median_index() const {
  if (reps.empty()) throw std::logic_error("median of a cell without repetitions");
  std::vector<size_t> order(reps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return reps[a].qps() < reps[b].qps(); });
  return order[(order.size() - 1) / 2];
}

namespace {

std::vector<double> capacities(const std::vector<v1::SearchResult>& searches) {
  std::vector<double> v;
  for (auto& s : searches) v.push_back(s.capacity());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

double CellResult::capacity() const {
  auto v = capacities(searches);
  return v.empty() ? 0 : v[(v.size() - 1) / 2];
}

double CellResult::capacity_min() const {
  auto v = capacities(searches);
  return v.empty() ? 0 : v.front();
}

double CellResult::capacity_max() const {
  auto v = capacities(searches);
  return v.empty() ? 0 : v.back();
}

const v1::SearchResult& CellResult::median_search() const {
  std::vector<const v1::SearchResult*> by;
  for (auto& s : searches) by.push_back(&s);
  std::stable_sort(by.begin(), by.end(), [](auto* a, auto* b) { return a->capacity() < b->capacity(); });
  return *by.at((by.size() - 1) / 2);
}

bool any_counted(const std::vector<CellResult>& cells) {
  return std::any_of(cells.begin(), cells.end(),
                     [](const CellResult& c) { return c.cell.instructions.has_value(); });
}

std::optional<double> CellResult::instructions() const {
  std::vector<double> v;
  for (auto& r : reps)
    if (r.has_instructions_per_request()) v.push_back(r.instructions_per_request());
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::string CellResult::instructions_unavailable() const {
  for (auto& r : reps)
    if (!r.instructions_unavailable().empty()) return r.instructions_unavailable();
  return "";
}

bool any_searched(const std::vector<CellResult>& cells) {
  return std::any_of(cells.begin(), cells.end(), [](const CellResult& c) { return !c.searches.empty(); });
}

double CellResult::qps_min() const {
  double v = reps.empty() ? 0 : reps[0].qps();
  for (auto& r : reps) v = std::min(v, r.qps());
  return v;
}

double CellResult::qps_max() const {
  double v = 0;
  for (auto& r : reps) v = std::max(v, r.qps());
  return v;
}

std::vector<std::string> CellResult::flags() const {
  std::vector<std::string> out;
  for (auto& r : reps)
    for (auto& f : r.flags())
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}

void add_cpu_profile(v1::CpuProfile& into, const v1::CpuProfile& o) {
  if (into.unavailable().empty() && !o.unavailable().empty()) into.set_unavailable(o.unavailable());
  if (o.samples() == 0) return;
  if (into.samples() == 0) {
    into.set_call_graph(o.call_graph());
    into.set_call_graph_probe(o.call_graph_probe());
  } else if (into.call_graph() != o.call_graph()) {  // each load agent's probe chose for itself
    into.set_call_graph_probe(into.call_graph_probe() + "; another load agent unwound with " +
                              o.call_graph() +
                              (o.call_graph_probe().empty() ? "" : " (" + o.call_graph_probe() + ")"));
  }
  FoldedStacks sum = parse_folded(into.folded());
  for (const auto& [stack, count] : parse_folded(o.folded())) sum[stack] += count;
  const double rooted = into.rooted_pct() * static_cast<double>(into.samples()) +
                        o.rooted_pct() * static_cast<double>(o.samples());
  into.set_kernel((into.samples() == 0 || into.kernel()) && o.kernel());  // of the parts with samples
  into.set_samples(into.samples() + o.samples());
  into.set_rooted_pct(rooted / static_cast<double>(into.samples()));
  into.set_dropped_samples(into.dropped_samples() + o.dropped_samples());
  into.set_folded(folded_text(sum));
}

void add_usage(v1::Usage& into, const v1::Usage& o) {
  into.set_window_s(std::max(into.window_s(), o.window_s()));
  into.set_cpu_pct(into.cpu_pct() + o.cpu_pct());
  into.set_cpu_user_pct(into.cpu_user_pct() + o.cpu_user_pct());
  into.set_cpu_system_pct(into.cpu_system_pct() + o.cpu_system_pct());
  into.set_rss_kb_mean(into.rss_kb_mean() + o.rss_kb_mean());
  into.set_rss_kb_peak(into.rss_kb_peak() + o.rss_kb_peak());
  into.set_rss_anon_kb_mean(into.rss_anon_kb_mean() + o.rss_anon_kb_mean());
  into.set_rss_anon_kb_peak(into.rss_anon_kb_peak() + o.rss_anon_kb_peak());
  into.set_samples(into.samples() + o.samples());
  into.set_processes(into.processes() + o.processes());
  into.set_steal_pct(into.steal_pct() + o.steal_pct());
  if (into.has_wait_pct() && o.has_wait_pct())
    into.set_wait_pct(into.wait_pct() + o.wait_pct());
  else
    into.clear_wait_pct();
  if (o.machine_cpu_pct() > into.machine_cpu_pct()) {
    into.set_machine_cpu_pct(o.machine_cpu_pct());
    into.set_machine_cores(o.machine_cores());
  }
  if (into.series_size() == 0) *into.mutable_series() = o.series();
  if (o.has_profile()) add_cpu_profile(*into.mutable_profile(), o.profile());
}

v1::CellConfig config_of(const Cell& c) {
  v1::CellConfig p;
  p.set_key(c.key());
  p.set_target(c.target);
  p.set_delay_ms(c.delay_ms);
  p.set_threads(c.threads);
  p.set_connections(c.connections);
  p.set_rate(c.rate);
  p.set_server_threads(c.server_threads);
  if (c.body_size) p.set_body_size(*c.body_size);
  p.set_keep_alive(c.keep_alive);
  p.set_client(c.client);
  p.set_protocol(c.protocol);
  p.set_tls_version(c.tls_version);
  p.set_streams(c.streams);
  if (c.instructions) p.set_instructions(std::string(instructions_method_name(*c.instructions)));
  if (c.rate > 0 && c.arrivals == proto::kPoissonArrivals) {
    p.set_arrivals(c.arrivals);
    p.set_seed(c.seed);
  }
  if (c.rate > 0) p.set_pace_granularity_us(c.pace_granularity_us);
  if (c.profile) {
    p.mutable_profile()->set_frequency_hz(c.profile->frequency_hz);
    p.mutable_profile()->set_call_graph(c.profile->call_graph);
  }
  for (auto& [name, text] : c.axes) {
    auto* a = p.add_axes();
    a->set_axis(name);
    a->set_value(text);
  }
  return p;
}

Cell cell_of(const v1::CellConfig& p) {
  Cell c;
  c.target = p.target();
  c.delay_ms = p.delay_ms();
  c.threads = p.threads();
  c.connections = p.connections();
  c.rate = p.rate();
  c.server_threads = p.server_threads();
  if (p.has_body_size()) c.body_size = p.body_size();
  c.keep_alive = p.keep_alive();
  c.client = p.client();
  c.protocol = p.protocol().empty() ? "http1" : p.protocol();  // runs from before protocols
  c.tls_version = p.tls_version();
  c.streams = p.streams() ? p.streams() : 1;                     // runs from before streams
  c.instructions = instructions_method_named(p.instructions());  // "" (not counted): none
  c.arrivals = p.arrivals().empty() ? std::string(proto::kUniformArrivals) : p.arrivals();
  c.seed = c.arrivals == proto::kPoissonArrivals ? p.seed() : 1;
  const double granularity = p.pace_granularity_us();  // a hand-edited file may hold anything
  c.pace_granularity_us = granularity >= 0 && granularity <= limits::kMaxPaceGranularityUs
                              ? static_cast<uint32_t>(granularity)
                              : 0;
  if (p.profile().frequency_hz() > 0)
    c.profile = ProfileSetting{p.profile().frequency_hz(), p.profile().call_graph()};
  for (auto& a : p.axes()) c.axes.emplace_back(a.axis(), a.value());
  return c;
}

v1::CellResult to_proto(const CellResult& c) {
  v1::CellResult p;
  *p.mutable_cell() = config_of(c.cell);
  p.set_ok(c.ok());
  p.set_error(c.error);
  for (auto& f : c.flags()) p.add_flags(f);
  for (auto& r : c.reps) *p.add_repetitions() = r;
  for (auto& r : c.confirmations) *p.add_confirmations() = r;
  for (auto& r : c.disturbed) *p.add_disturbed() = r;
  for (auto& s : c.searches) *p.add_searches() = s;
  if (!c.searches.empty()) {
    p.set_capacity(c.capacity());
    p.set_capacity_min(c.capacity_min());
    p.set_capacity_max(c.capacity_max());
  }
  if (!c.reps.empty()) {
    p.set_median_index(static_cast<uint32_t>(c.median_index()));
    auto* m = p.mutable_median();
    *m = c.median();
    m->clear_histogram();  // the histogram and the series stay with their repetition
    m->clear_intervals();
    m->mutable_server()->clear_series();
    m->mutable_client()->clear_series();
    for (auto& part : *m->mutable_load_parts()) part.mutable_client()->clear_series();
    p.set_qps_min(c.qps_min());
    p.set_qps_max(c.qps_max());
  }
  return p;
}

CellResult cell_from_proto(const v1::CellResult& p, const Cell& cell) {
  CellResult c;
  c.cell = cell;
  c.error = p.error();
  c.reps.assign(p.repetitions().begin(), p.repetitions().end());
  c.confirmations.assign(p.confirmations().begin(), p.confirmations().end());
  c.disturbed.assign(p.disturbed().begin(), p.disturbed().end());
  c.searches.assign(p.searches().begin(), p.searches().end());
  return c;
}

}  // namespace loadlab::controller
