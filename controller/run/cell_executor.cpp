#include "run/cell_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "capacity/capacity_search.hpp"
#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/limits.hpp"
#include "results/quality_flags.hpp"
#include "run/cpu_profiles.hpp"
#include "run/instructions.hpp"

namespace loadlab::controller {

namespace {

// A search's step as result.json keeps it.
v1::SearchStep step_proto(const SearchStep& judged, const v1::Repetition* r) {
  v1::SearchStep s;
  s.set_kind(kind_name(judged.plan.kind));
  s.set_rate(judged.plan.rate);
  s.set_duration_s(judged.plan.duration_s);
  s.set_threads(judged.plan.threads);
  s.set_connections(judged.plan.connections);
  s.set_streams(judged.plan.streams);
  s.set_connection_bound(judged.plan.connection_bound);
  s.set_verdict(verdict_name(judged.verdict));
  s.set_why(judged.why);
  s.set_counted(judged.counted);
  if (r) *s.mutable_repetition() = *r;
  return s;
}

}  // namespace

CellOptions CellOptions::from(const Scenario& s, const std::atomic<int>* stop) {
  CellOptions o;
  o.repetition.limits = PhaseLimits::from(s.execution);
  o.repetition.stop = stop;
  o.retry.retries = s.execution.retries;
  // Steps double up to 30 s, or up to the base itself when a scenario asks for longer.
  o.retry.backoff = {s.execution.retry_backoff_s, std::max(30.0, s.execution.retry_backoff_s)};
  o.retry.stop = stop;
  return o;
}

CellExecutor::CellExecutor(const Scenario& s, const AgentPool& pool, ProgressReporter& progress,
                           CellOptions options)
    : scenario_(s), pool_(pool), progress_(progress), options_(std::move(options)), cores_(pool.cores()) {
  options_.repetition.progress = [this](const LiveProgress& p) { progress_.live(p); };
}

std::optional<CellResult> CellExecutor::run(const Cell& cell, size_t finished) {
  CellResult cr;
  cr.cell = cell;
  if (scenario_.search) {
    if (!search(cell, scenario_.repetitions, finished, cr)) return std::nullopt;
    return cr;
  }
  if (!repeat(cell, scenario_.repetitions, finished, cr.reps, cr.error)) return std::nullopt;
  return cr;
}

bool CellExecutor::search(const Cell& cell, uint32_t count, size_t finished, CellResult& into) {
  SearchLoad load;
  load.threads = cell.threads;
  load.connections = cell.connections;
  load.multiplexed = proto::multiplexes(*proto::protocol_from_name(cell.protocol));
  load.timeout_s = (scenario_.load.timeout_ms ? scenario_.load.timeout_ms
                                              : static_cast<uint32_t>(limits::kDefaultTimeoutMs)) /
                   1000.0;
  load.warmup_s = scenario_.load.warmup_s;
  for (uint32_t rep = 0; rep < count && into.error.empty(); ++rep) {
    CapacitySearch search(*scenario_.search, load);
    v1::SearchResult result;
    std::optional<v1::Repetition> last, last_pass;
    while (auto plan = search.next()) {
      Cell step = cell;
      step.rate = plan->rate;
      step.threads = plan->threads;
      step.connections = plan->connections;
      step.streams = plan->streams;
      step.window_s = plan->duration_s;
      std::vector<v1::Repetition> measured;
      std::string error;
      progress_.info(cell.key() + fmt::format(" search {}: {} at {:.0f} req/s ({} connections, {:g} s)",
                                              rep + 1, kind_name(plan->kind), plan->rate, plan->connections,
                                              plan->duration_s));
      if (!one(step, rep, count, finished, measured, error)) return false;  // stopping
      const v1::Repetition* r = measured.empty() ? nullptr : &measured.back();
      search.record(r, error);
      const SearchStep& judged = search.steps().back();
      *result.add_steps() = step_proto(judged, r);
      if (r) {
        last = *r;
        if (judged.verdict == StepVerdict::kPass && judged.counted) last_pass = *r;
      }
      progress_.info(cell.key() + " " + verdict_name(judged.verdict) +
                     (judged.why.empty() ? "" : ": " + judged.why));
    }
    for (const auto& o : scenario_.search->slo) (*result.mutable_slo())[o.figure] = o.limit;
    result.set_end(end_name(search.end()));
    result.set_capacity(search.capacity());
    result.set_reason(search.reason());
    progress_.info(cell.key() + ": " + search.reason());
    if (search.end() == CapacitySearch::End::kFailed) into.error = "search: " + search.reason();
    into.searches.push_back(std::move(result));
    if (last_pass || last) {
      into.reps.push_back(std::move(last_pass ? *last_pass : *last));
      into.reps.back().set_capacity(search.capacity());  // the metric `capacity`
    }
  }
  return true;
}

bool CellExecutor::confirm(CellResult& into, uint32_t count, size_t finished) {
  std::string error;
  if (scenario_.search) {  // more searches: their figures (each with its capacity) confirm
    CellResult more;
    more.cell = into.cell;
    if (!search(into.cell, count, finished, more)) return false;
    into.confirmations.insert(into.confirmations.end(), more.reps.begin(), more.reps.end());
    return true;
  }
  return repeat(into.cell, count, finished, into.confirmations, error);
}

bool CellExecutor::remeasure(CellResult& into, size_t finished) {
  std::vector<v1::Repetition> fresh;
  std::string error;
  if (scenario_.search) {  // the searches again: they replace the cell's
    CellResult again;
    again.cell = into.cell;
    if (!search(into.cell, scenario_.repetitions, finished, again)) return false;
    if (!again.ok()) {
      progress_.info(into.cell.key() + ": searching again failed (" + again.error +
                     "); its first searches stay");
      return true;
    }
    auto before = std::exchange(into.reps, std::move(again.reps));
    into.disturbed.insert(into.disturbed.end(), before.begin(), before.end());
    into.searches = std::move(again.searches);
    return true;
  }
  if (!repeat(into.cell, scenario_.repetitions, finished, fresh, error)) return false;
  if (!error.empty() || fresh.empty()) {
    progress_.info(into.cell.key() + ": measuring again failed (" + error + "); its first measurement stays");
    return true;
  }
  auto before = std::exchange(into.reps, std::move(fresh));
  into.disturbed.insert(into.disturbed.end(), before.begin(), before.end());
  return true;
}

bool CellExecutor::remeasure_pair(CellResult& a, CellResult& b, size_t finished) {
  std::vector<v1::Repetition> a_fresh, b_fresh;
  std::string a_error, b_error;
  if (!pairs(a.cell, b.cell, scenario_.repetitions, finished, {&a_fresh, &a_error}, {&b_fresh, &b_error}))
    return false;
  if (!a_error.empty() || !b_error.empty() || a_fresh.size() != b_fresh.size() || a_fresh.empty()) {
    progress_.info(b.cell.key() + " against " + a.cell.key() + ": measuring the pairs again failed (" +
                   (a_error.empty() ? b_error : a_error) + "); the first pairs stay");
    return true;
  }
  for (auto [into, fresh] : {std::pair{&a, &a_fresh}, std::pair{&b, &b_fresh}}) {
    auto before = std::exchange(into->reps, std::move(*fresh));
    into->disturbed.insert(into->disturbed.end(), before.begin(), before.end());
  }
  return true;
}

bool CellExecutor::repeat(const Cell& cell, uint32_t count, size_t finished,
                          std::vector<v1::Repetition>& reps, std::string& error) {
  for (uint32_t rep = 0; rep < count && error.empty(); ++rep)
    if (!one(cell, rep, count, finished, reps, error)) return false;
  return true;
}

std::optional<std::pair<CellResult, CellResult>> CellExecutor::run_pair(const Cell& a, const Cell& b,
                                                                        size_t finished) {
  std::pair<CellResult, CellResult> out;
  out.first.cell = a;
  out.second.cell = b;
  if (!pairs(a, b, scenario_.repetitions, finished, {&out.first.reps, &out.first.error},
             {&out.second.reps, &out.second.error}))
    return std::nullopt;
  return out;
}

bool CellExecutor::confirm_pair(CellResult& a, CellResult& b, uint32_t count, size_t finished) {
  std::string a_error, b_error;  // a failed confirmation ends with what it has, as confirm() does
  return pairs(a.cell, b.cell, count, finished, {&a.confirmations, &a_error}, {&b.confirmations, &b_error});
}

bool CellExecutor::pairs(const Cell& a, const Cell& b, uint32_t count, size_t finished, Side a_side,
                         Side b_side) {
  const Cell* cells[] = {&a, &b};
  Side sides[] = {a_side, b_side};
  for (uint32_t rep = 0; rep < count; ++rep) {
    const size_t first = rep % 2;  // B first in the odd pairs
    for (size_t k : {first, 1 - first})
      if (!one(*cells[k], rep, count, finished, *sides[k].reps, *sides[k].error)) return false;
    if (!a_side.error->empty() || !b_side.error->empty()) {
      // One side failed: the pairs stop, and the other side fails with it.
      for (size_t k : {0, 1})
        if (sides[k].error->empty())
          *sides[k].error =
              "measure: its A/B partner " + cells[1 - k]->key() + " failed, so no pair could be completed";
      break;
    }
  }
  return true;
}

bool CellExecutor::one(const Cell& cell, uint32_t rep, uint32_t count, size_t finished,
                       std::vector<v1::Repetition>& reps, std::string& error) {
  auto attempt = [&](uint32_t n) {
    return run_repetition(pool_.place(scenario_, cell, n), scenario_, cell, options_.repetition);
  };
  // The agents the next attempt will use, with its rotation, must answer again.
  auto ready = [&](uint32_t n, std::chrono::milliseconds deadline) {
    return pool_.answer(pool_.place(scenario_, cell, n), deadline);
  };
  auto note = [&](const std::string& line) { progress_.note(cell.key() + " " + line); };
  progress_.cell_started(finished, cell.key(), rep, count);
  auto outcome = run_with_retries(options_.retry, attempt, ready, note);
  if (outcome.stopped) return false;
  if (!outcome.rep) {
    error = outcome.error;
    return true;
  }
  for (auto& f : saturation_flags(*outcome.rep, cores_)) outcome.rep->add_flags(f);
  keep_cpu_profiles(cell, options_.profile_dir, *outcome.rep);
  for (const auto* side : {&outcome.rep->server(), &outcome.rep->client()})
    if (!side->profile().unavailable().empty())
      progress_.note(cell.key() + " profile unavailable: " + side->profile().unavailable());
  if (cell.instructions == InstructionsMethod::kCallgrind) {
    progress_.info(cell.key() + " counting instructions under callgrind");
    record_probe(probe_instructions(pool_.place(scenario_, cell, 0), scenario_, cell, options_.repetition),
                 cell, options_.profile_dir, *outcome.rep);
  }
  if (cell.instructions && !outcome.rep->has_instructions_per_request())
    progress_.note(cell.key() + " instructions unavailable: " + outcome.rep->instructions_unavailable());
  reps.push_back(std::move(*outcome.rep));
  return true;
}

}  // namespace loadlab::controller
