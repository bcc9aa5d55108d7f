#include "job_support.hpp"

namespace loadlab::agent {

ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace) {
  // terminate() reaches the whole tree itself (job cgroup, or the group plus descendants
  // held by pidfd): no pid read earlier is signalled, since it may be a stranger's by now.
  auto st = child.terminate(grace);
  proc.forget_exited();
  return st;
}

void fill_usage(const UsageFigures& f, const std::string& label, v1::Usage* u) {
  u->set_label(label);
  u->set_window_s(f.window_s);
  u->set_cpu_pct(f.cpu_pct);
  u->set_cpu_user_pct(f.cpu_user_pct);
  u->set_cpu_system_pct(f.cpu_system_pct);
  u->set_rss_kb_mean(f.rss_kb_mean);
  u->set_rss_kb_peak(f.rss_kb_peak);
  u->set_samples(f.samples);
  u->set_processes(f.processes);
  u->set_machine_cpu_pct(f.machine_cpu_pct);
  u->set_machine_cores(f.machine_cores);
  for (auto& p : f.series) {
    auto* point = u->add_series();
    point->set_t_s(p.t_s);
    point->set_cpu_pct(p.cpu_pct);
    point->set_rss_kb(p.rss_kb);
  }
}

}  // namespace loadlab::agent
