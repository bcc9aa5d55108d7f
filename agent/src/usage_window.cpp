#include "loadlab/agent/usage_window.hpp"

#include <chrono>
#include <unordered_map>
#include <unordered_set>

namespace loadlab::agent {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TreeReading read_tree(ProcReader& reader, pid_t root) {
  TreeReading r;
  auto root_stat = reader.stat(root);
  if (!root_stat) return r;
  std::unordered_map<pid_t, std::vector<ProcStat>> by_parent;
  for (pid_t pid : reader.list_pids()) {
    if (pid == root) continue;
    if (auto s = reader.stat(pid)) by_parent[s->ppid].push_back(*s);
  }
  const double tps = static_cast<double>(reader.ticks_per_second());
  std::vector<ProcStat> todo{*root_stat};
  std::unordered_set<pid_t> seen{root};
  while (!todo.empty()) {
    ProcStat s = todo.back();
    todo.pop_back();
    if (s.cpu_ns >= 0) {
      // Exact own time, split by the tick counters' ratio; plus reaped children's ticks.
      double own = static_cast<double>(s.cpu_ns) / 1e9;
      double ticks = static_cast<double>(s.utime + s.stime);
      double user_share = ticks > 0 ? static_cast<double>(s.utime) / ticks : 1.0;
      r.user_s += own * user_share + static_cast<double>(s.cutime) / tps;
      r.system_s += own * (1 - user_share) + static_cast<double>(s.cstime) / tps;
    } else {
      r.user_s += static_cast<double>(s.utime + s.cutime) / tps;
      r.system_s += static_cast<double>(s.stime + s.cstime) / tps;
    }
    r.rss_kb += s.rss_kb;
    ++r.processes;
    auto it = by_parent.find(s.pid);
    if (it == by_parent.end()) continue;
    for (auto& c : it->second)
      if (seen.insert(c.pid).second) todo.push_back(c);
  }
  return r;
}

UsageWindow::UsageWindow(ProcReader& reader, pid_t root, Clock clock)
    : reader_(reader), root_(root), clock_(std::move(clock)) {}

void UsageWindow::start() {
  std::lock_guard lock(mutex_);
  start_ = read_tree(reader_, root_);
  t0_ = clock_();
  t1_ = -1;
  open_ = true;
  rss_sum_ = start_.rss_kb;
  rss_peak_ = start_.rss_kb;
  samples_ = 1;
}

void UsageWindow::sample() {
  std::lock_guard lock(mutex_);
  if (!open_) return;
  auto r = read_tree(reader_, root_);
  if (r.processes == 0) return;
  rss_sum_ += r.rss_kb;
  rss_peak_ = std::max(rss_peak_, r.rss_kb);
  ++samples_;
}

bool UsageWindow::open() const {
  std::lock_guard lock(mutex_);
  return open_;
}

void UsageWindow::close_at_now() {
  std::lock_guard lock(mutex_);
  if (open_ && t1_ < 0) t1_ = clock_();
}

UsageFigures UsageWindow::finish_closed(const TreeReading& end) { return finish(&end); }

UsageFigures UsageWindow::finish(const TreeReading* given_end) {
  std::lock_guard lock(mutex_);
  UsageFigures f;
  if (!open_) return f;
  open_ = false;
  TreeReading end = given_end ? *given_end : read_tree(reader_, root_);
  f.window_s = (t1_ >= 0 ? t1_ : clock_()) - t0_;
  if (end.rss_kb > 0) {
    rss_sum_ += end.rss_kb;
    rss_peak_ = std::max(rss_peak_, end.rss_kb);
    ++samples_;
  }
  auto pct = [&](double a, double b) {
    if (f.window_s <= 0 || b < a) return 0.0;
    return (b - a) / f.window_s * 100.0;
  };
  f.cpu_user_pct = pct(start_.user_s, end.user_s);
  f.cpu_system_pct = pct(start_.system_s, end.system_s);
  f.cpu_pct = f.cpu_user_pct + f.cpu_system_pct;
  f.rss_kb_mean = samples_ ? rss_sum_ / samples_ : 0;
  f.rss_kb_peak = rss_peak_;
  f.samples = samples_;
  f.processes = end.processes;
  return f;
}

}  // namespace loadlab::agent
