#include "loadlab/controller/flags.hpp"

namespace loadlab::controller {

std::vector<std::string> saturation_flags(const v1::Repetition& r,
                                          const std::map<std::string, uint32_t>& cores) {
  std::vector<std::string> flags;
  auto add = [&](const std::string& f) {
    if (std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(f);
  };
  // The benchmark's own CPU on each machine: the target and every load part placed there.
  std::map<std::string, double> own;
  std::map<std::string, double> machine;
  own[r.target_agent()] += r.server().cpu_pct();
  machine[r.target_agent()] = std::max(machine[r.target_agent()], r.server().machine_cpu_pct());
  for (auto& p : r.load_parts()) {
    own[p.agent()] += p.client().cpu_pct();
    machine[p.agent()] = std::max(machine[p.agent()], p.client().machine_cpu_pct());
    auto c = cores.find(p.agent());
    if (c != cores.end() && c->second > 0 && p.client().cpu_pct() >= 0.9 * 100.0 * c->second)
      add("client-saturated");
  }
  if (r.rate_not_held()) add("rate-not-held");
  for (auto& [agent, busy] : machine)
    if (busy >= 0 && busy - own[agent] >= 50.0) add("busy-machine:" + agent);
  return flags;
}

}  // namespace loadlab::controller
