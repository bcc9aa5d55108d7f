#include "loadlab/controller/flags.hpp"

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
    machine_ = std::max(machine_, u.machine_cpu_pct());
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
    if (whole_machine() || cpus_.empty()) return machine_;
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

}  // namespace

std::vector<std::string> saturation_flags(const v1::Repetition& r,
                                          const std::map<std::string, uint32_t>& cores) {
  std::vector<std::string> flags;
  auto add = [&](const std::string& f) {
    if (std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(f);
  };
  // The benchmark's own CPU on each machine (the target and every load part placed there),
  // and how busy the CPUs they were allowed on were.
  std::map<std::string, double> own;
  std::map<std::string, CellCpus> machine;
  own[r.target_agent()] += r.server().cpu_pct();
  machine[r.target_agent()].add(r.server());
  for (auto& p : r.load_parts()) {
    own[p.agent()] += p.client().cpu_pct();
    machine[p.agent()].add(p.client());
    // The worker's CPUs: the set it was allowed on, else its machine's cores.
    auto c = cores.find(p.agent());
    auto allowed = CpuList::parse(p.client().cpus());
    uint32_t n = allowed ? allowed->size() : c != cores.end() ? c->second : 0;
    if (n > 0 && p.client().cpu_pct() >= 0.9 * 100.0 * n) add("client-saturated");
  }
  if (r.rate_not_held()) add("rate-not-held");
  for (auto& [agent, cpus] : machine) {
    auto c = cores.find(agent);
    double busy = cpus.busy_pct();
    if (busy >= 0 &&
        busy - own[agent] >= busy_machine_threshold_pct(cpus.cpu_count(c != cores.end() ? c->second : 0)))
      add("busy-machine:" + agent);
  }
  return flags;
}

double busy_machine_threshold_pct(uint32_t cpus) { return std::max(20.0, 10.0 * cpus); }

bool busy_machine(const v1::Repetition& r) {
  return std::any_of(r.flags().begin(), r.flags().end(),
                     [](const std::string& f) { return f.rfind("busy-machine:", 0) == 0; });
}

}  // namespace loadlab::controller
