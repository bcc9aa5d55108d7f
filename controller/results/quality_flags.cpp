#include "results/quality_flags.hpp"

#include <algorithm>

#include "loadlab/shared/cpu_list.hpp"

namespace loadlab::controller {

namespace {

// The CPUs a cell's parts on one machine were allowed on, and how busy they were: the per-CPU
// figures of the agent's Usage (the busiest reading of each CPU), or, from an agent that
// gives none, the whole machine's.
class CellCpus {
 public:
  void add(const v1::Usage& u) {
    // No busy figure at all (0 is not one: the cell's own processes ran) leaves it unknown.
    if (u.machine_cpu_pct() > 0) machine_ = std::max(machine_, u.machine_cpu_pct());
    for (auto& b : u.cpu_busy()) busy_[b.cpu()] = std::max(busy_[b.cpu()], b.busy_pct());
    auto cpus = CpuList::parse(u.cpus());
    if (!cpus || u.cpu_busy().empty()) {
      whole_machine_ = true;
      return;
    }
    cpus_ = cpus_.united(*cpus);
  }
  // 100 = one core; -1 when unknown.
  double busy_pct() const {
    if (whole_machine()) return machine_;
    double sum = 0;
    for (uint32_t c : cpus_.cpus())
      if (auto it = busy_.find(c); it != busy_.end()) sum += it->second;
    return sum;
  }
  // How many CPUs busy_pct() is of: the cell's set, else the machine's `cores` (0 unknown).
  uint32_t cpu_count(uint32_t cores) const {
    return whole_machine() ? cores : static_cast<uint32_t>(cpus_.size());
  }

 private:
  bool whole_machine() const { return whole_machine_ || cpus_.empty(); }
  double machine_ = -1;
  bool whole_machine_ = false;
  CpuList cpus_;
  std::map<uint32_t, double> busy_;
};

// Per agent whose machine ran a part of the cell: other work on the CPUs its parts were allowed
// on (their busy time less the benchmark's own CPU), in % of one core, and how many CPUs that is
// of. Agents whose machine gave no busy figure are left out.
struct OtherWork {
  double pct;
  uint32_t cpus;
};
std::map<std::string, OtherWork> other_work(const v1::Repetition& r,
                                            const std::map<std::string, uint32_t>& cores) {
  std::map<std::string, double> own;
  std::map<std::string, CellCpus> machine;
  own[r.target_agent()] += r.server().cpu_pct();
  machine[r.target_agent()].add(r.server());
  for (auto& p : r.load_parts()) {
    own[p.agent()] += p.client().cpu_pct();
    machine[p.agent()].add(p.client());
  }
  std::map<std::string, OtherWork> out;
  for (auto& [agent, cpus] : machine) {
    auto c = cores.find(agent);
    if (double busy = cpus.busy_pct(); busy >= 0)
      out[agent] = {busy - own[agent], cpus.cpu_count(c != cores.end() ? c->second : 0)};
  }
  return out;
}

constexpr std::pair<QualityFlag, std::string_view> kFlagNames[] = {
    {QualityFlag::kClientSaturated, "client-saturated"}, {QualityFlag::kRateNotHeld, "rate-not-held"},
    {QualityFlag::kBusyMachine, "busy-machine"},         {QualityFlag::kStalled, "stalled"},
    {QualityFlag::kWindowSkew, "window-skew"},           {QualityFlag::kProfiled, "profiled"},
};

void add_flag(v1::Repetition& r, const std::string& flag) {
  if (std::find(r.flags().begin(), r.flags().end(), flag) == r.flags().end()) r.add_flags(flag);
}

}  // namespace

std::string_view flag_name(QualityFlag f) {
  for (auto& [flag, name] : kFlagNames)
    if (flag == f) return name;
  return "";  // unreachable: every kind is in the table
}

std::string flag_text(QualityFlag f, const std::string& agent) {
  return std::string(flag_name(f)) + (agent.empty() ? "" : ":" + agent);
}

std::optional<QualityFlag> flag_kind(std::string_view written) {
  const std::string_view kind = written.substr(0, written.find(':'));
  for (auto& [flag, name] : kFlagNames)
    if (name == kind) return flag;
  return std::nullopt;
}

bool has_flag(const v1::Repetition& r, QualityFlag f) {
  return std::any_of(r.flags().begin(), r.flags().end(),
                     [f](const std::string& w) { return flag_kind(w) == f; });
}

std::vector<std::string> saturation_flags(const v1::Repetition& r,
                                          const std::map<std::string, uint32_t>& cores) {
  std::vector<std::string> flags;
  auto add = [&](const std::string& f) {
    if (std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(f);
  };
  for (auto& p : r.load_parts()) {
    // The worker's CPUs: the set it was allowed on, else its machine's cores.
    auto c = cores.find(p.agent());
    auto allowed = CpuList::parse(p.client().cpus());
    uint32_t n = allowed ? allowed->size() : c != cores.end() ? c->second : 0;
    // A worker of fewer threads than CPUs uses at most a core a thread.
    if (p.threads() > 0) n = n > 0 ? std::min(n, p.threads()) : p.threads();
    if (n > 0 && p.client().cpu_pct() >= 0.9 * 100.0 * n) add(flag_text(QualityFlag::kClientSaturated));
  }
  if (r.rate_not_held()) add(flag_text(QualityFlag::kRateNotHeld));
  for (auto& [agent, other] : other_work(r, cores))
    if (other.pct >= busy_machine_threshold_pct(other.cpus)) add(flag_text(QualityFlag::kBusyMachine, agent));
  if (r.server().stalls() > 0) add(flag_text(QualityFlag::kStalled, r.target_agent()));
  for (auto& p : r.load_parts())
    if (p.client().stalls() > 0) add(flag_text(QualityFlag::kStalled, p.agent()));
  return flags;
}

std::vector<std::string> summarized_flags(const std::vector<std::string>& flags) {
  std::vector<std::string> kinds;  // in the order they first appear
  std::map<std::string, std::vector<std::string>> by_kind;
  for (const auto& f : flags) {
    const auto colon = f.find(':');
    const std::string kind = colon == std::string::npos ? f : f.substr(0, colon);
    if (!by_kind.count(kind)) kinds.push_back(kind);
    by_kind[kind].push_back(f);
  }
  std::vector<std::string> out;
  for (const auto& kind : kinds) {
    const auto& all = by_kind[kind];
    if (all.size() > kFlagAgentsListed && all.front().size() > kind.size())
      out.push_back(kind + ": " + std::to_string(all.size()) + " agents");
    else
      out.insert(out.end(), all.begin(), all.end());
  }
  return out;
}

double busy_machine_threshold_pct(uint32_t cpus) { return std::max(20.0, 10.0 * cpus); }

void flag_busy_outliers(const std::vector<v1::Repetition*>& reps,
                        const std::map<std::string, uint32_t>& cores) {
  if (reps.size() < kBusyOutlierMinRepetitions) return;
  std::map<std::string, std::vector<double>> by_agent;
  std::vector<std::map<std::string, OtherWork>> each;
  for (const v1::Repetition* r : reps) {
    each.push_back(other_work(*r, cores));
    for (auto& [agent, other] : each.back()) by_agent[agent].push_back(other.pct);
  }
  std::map<std::string, double> median;
  for (auto& [agent, v] : by_agent) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    median[agent] = v[v.size() / 2];
  }
  for (size_t i = 0; i < reps.size(); ++i)
    for (auto& [agent, other] : each[i])
      if (other.pct - median[agent] >= kBusyOutlierPct)
        add_flag(*reps[i], flag_text(QualityFlag::kBusyMachine, agent));
}

std::optional<double> other_work_pct(const v1::Repetition& r) {
  std::optional<double> most;
  for (auto& [agent, other] : other_work(r, {}))
    if (!most || other.pct > *most) most = other.pct;
  return most;
}

}  // namespace loadlab::controller
