#include "loadlab/agent/usage_window.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "loadlab/shared/cpu_list.hpp"

namespace loadlab::agent {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

PiMutex::PiMutex() {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
  pthread_mutex_init(&mutex_, &attr);
  pthread_mutexattr_destroy(&attr);
}
PiMutex::~PiMutex() { pthread_mutex_destroy(&mutex_); }
void PiMutex::lock() { pthread_mutex_lock(&mutex_); }
void PiMutex::unlock() { pthread_mutex_unlock(&mutex_); }
bool PiMutex::try_lock() { return pthread_mutex_trylock(&mutex_) == 0; }

RealtimeScope::RealtimeScope(int priority) {
  sched_param old{};
  if (pthread_getschedparam(pthread_self(), &policy_, &old) != 0) return;
  priority_ = old.sched_priority;
  sched_param rt{};
  rt.sched_priority = priority;
  raised_ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt) == 0;
}

RealtimeScope::~RealtimeScope() {
  if (!raised_) return;
  sched_param old{};
  old.sched_priority = priority_;
  pthread_setschedparam(pthread_self(), policy_, &old);
}

void sleep_until_monotonic_ns(int64_t at_ns) {
  if (at_ns <= monotonic_ns()) return;
  timespec ts{};
  ts.tv_sec = at_ns / 1'000'000'000;
  ts.tv_nsec = at_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

namespace {

void add(TreeReading& r, const ProcStat& s, double tps) {
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
  r.rss_anon_kb += s.rss_anon_kb;
  ++r.processes;
}

// Descendants by a full scan of parent pids, for kernels without /proc/PID/task/*/children.
std::vector<ProcStat> scan_tree(ProcReader& reader, const ProcStat& root) {
  std::unordered_map<pid_t, std::vector<ProcStat>> by_parent;
  for (pid_t pid : reader.list_pids()) {
    if (pid == root.pid) continue;
    if (auto s = reader.stat(pid)) by_parent[s->ppid].push_back(*s);
  }
  std::vector<ProcStat> tree{root}, todo{root};
  std::unordered_set<pid_t> seen{root.pid};
  while (!todo.empty()) {
    ProcStat s = todo.back();
    todo.pop_back();
    auto it = by_parent.find(s.pid);
    if (it == by_parent.end()) continue;
    for (auto& c : it->second)
      if (seen.insert(c.pid).second) {
        tree.push_back(c);
        todo.push_back(c);
      }
  }
  return tree;
}

double machine_pct(const std::optional<MachineCpu>& a, const std::optional<MachineCpu>& b) {
  if (!a || !b || b->total <= a->total || b->busy < a->busy) return -1;
  // Busy share of all cores, scaled so 100 = one core like the process figures.
  return static_cast<double>(b->busy - a->busy) / static_cast<double>(b->total - a->total) * 100.0 * b->cores;
}

// Each CPU's busy share over the window (100 = that CPU fully busy), and the steal of the
// CPUs in `cpus` (all of them when empty) in the unit of the process figures (100 = one core).
void add_cpu_figures(const MachineCpu& a, const MachineCpu& b, const std::string& cpus, v1::Usage& f) {
  auto allowed = CpuList::parse(cpus);
  double steal_ticks = 0, total_ticks = 0;
  uint32_t counted = 0;
  for (auto& end : b.per_cpu) {
    auto it = std::find_if(a.per_cpu.begin(), a.per_cpu.end(), [&](auto& t) { return t.cpu == end.cpu; });
    if (it == a.per_cpu.end() || end.total <= it->total || end.busy < it->busy) continue;
    const double total = static_cast<double>(end.total - it->total);
    auto* busy = f.add_cpu_busy();
    busy->set_cpu(end.cpu);
    busy->set_busy_pct(static_cast<double>(end.busy - it->busy) / total * 100.0);
    if (allowed && !allowed->contains(end.cpu)) continue;
    steal_ticks += static_cast<double>(end.steal >= it->steal ? end.steal - it->steal : 0);
    total_ticks += total;
    ++counted;
  }
  // Ticks are the CPUs' own, so the share of their total times their count is in cores.
  if (total_ticks > 0) f.set_steal_pct(steal_ticks / total_ticks * 100.0 * counted);
}

// On the cgroup2 path the job's cpu.stat replaces the tree's sum: it is as exact, and it
// keeps the CPU of descendants the tree has lost (double-forked, reaped by init).
TreeReading with_job_cpu(ProcReader& reader, pid_t root, TreeReading r) {
  if (auto cpu = reader.job_cpu(root)) {
    r.user_s = cpu->user_s;
    r.system_s = cpu->system_s;
  }
  return r;
}

}  // namespace

TreeReading read_tree(ProcReader& reader, pid_t root) {
  TreeReading r;
  const double tps = static_cast<double>(reader.ticks_per_second());
  auto root_stat = reader.stat(root);
  if (!root_stat) return r;
  auto root_children = reader.children(root, root_stat->threads);
  if (!root_children) {
    for (auto& s : scan_tree(reader, *root_stat)) add(r, s, tps);
    return with_job_cpu(reader, root, r);
  }
  // Walk down from the root: only the tree's own files are read.
  add(r, *root_stat, tps);
  std::vector<pid_t> todo = std::move(*root_children);
  std::unordered_set<pid_t> seen{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    if (!seen.insert(p).second) continue;
    auto s = reader.stat(p);
    if (!s) continue;  // exited meanwhile
    add(r, *s, tps);
    if (auto kids = reader.children(p, s->threads)) todo.insert(todo.end(), kids->begin(), kids->end());
  }
  return with_job_cpu(reader, root, r);
}

std::vector<pid_t> tree_pids(ProcReader& reader, pid_t root) {
  std::vector<pid_t> out;
  auto root_stat = reader.stat(root);
  if (!root_stat) return out;
  if (!reader.children(root, root_stat->threads)) {
    for (auto& s : scan_tree(reader, *root_stat)) out.push_back(s.pid);
    return out;
  }
  std::unordered_set<pid_t> seen;
  std::vector<std::pair<pid_t, uint32_t>> todo{{root, root_stat->threads}};
  while (!todo.empty()) {
    auto [p, threads] = todo.back();
    todo.pop_back();
    if (!seen.insert(p).second) continue;
    out.push_back(p);
    if (auto kids = reader.children(p, threads))
      for (pid_t c : *kids)
        if (auto s = reader.stat(c)) todo.emplace_back(c, s->threads);
  }
  return out;
}

void UsageWindow::read_delays() {
  for (pid_t p : tree_pids(reader_, root_))
    for (auto [tid, s] : reader_.run_delays_s(p)) {
      delays_known_ = true;
      auto [it, fresh] = delays_.try_emplace(tid, s, s);
      if (!fresh) it->second.second = std::max(it->second.second, s);
    }
}

UsageWindow::UsageWindow(ProcReader& reader, pid_t root, Clock clock)
    : reader_(reader), root_(root), clock_(std::move(clock)) {}

void UsageWindow::prepare() {
  std::lock_guard lock(mutex_);
  prepare_locked();
}

void UsageWindow::prepare_locked() {
  cpus_ = reader_.cpus_allowed(root_).value_or("");
  probe_.reset();
  stalls_.reset();
  auto cpus = CpuList::parse(cpus_);
  probe_ = std::make_unique<StallProbe>(cpus ? cpus->cpus() : std::vector<uint32_t>{});
  prepared_ = true;
}

void UsageWindow::start() {
  std::lock_guard lock(mutex_);
  // The job's CPU first, at the window's opening; then what takes longer. What a window
  // needs beforehand (the stall probe's threads) was started by prepare() if it was called.
  t0_ = clock_();
  start_ = read_tree(reader_, root_);
  machine_start_ = reader_.machine_cpu();
  machine_end_.reset();
  if (!prepared_) prepare_locked();
  prepared_ = false;
  delays_.clear();
  delays_known_ = false;
  read_delays();
  t1_ = -1;
  open_ = true;
  rss_sum_ = start_.rss_kb;
  rss_peak_ = start_.rss_kb;
  anon_sum_ = anon_peak_ = start_.rss_anon_kb;
  samples_ = 1;
  last_t_ = t0_;
  last_cpu_s_ = start_.cpu_s();
  series_.clear();
  series_.push_back({0, 0, start_.rss_kb});
}

void UsageWindow::sample() {
  std::lock_guard lock(mutex_);
  if (!open_ || t1_ >= 0) return;
  read_delays();
  auto r = read_tree(reader_, root_);
  double now = clock_();
  if (r.processes == 0) return;
  rss_sum_ += r.rss_kb;
  rss_peak_ = std::max(rss_peak_, r.rss_kb);
  anon_sum_ += r.rss_anon_kb;
  anon_peak_ = std::max(anon_peak_, r.rss_anon_kb);
  ++samples_;
  if (series_.size() < kMaxSeries && now > last_t_) {
    double pct = std::max(0.0, (r.cpu_s() - last_cpu_s_) / (now - last_t_) * 100.0);
    series_.push_back({now - t0_, pct, r.rss_kb});
  }
  last_t_ = now;
  last_cpu_s_ = r.cpu_s();
}

void UsageWindow::close_at_now() {
  std::lock_guard lock(mutex_);
  if (open_ && t1_ < 0) {
    t1_ = clock_();
    machine_end_ = reader_.machine_cpu();
    read_delays();
    stop_probe();
  }
}

void UsageWindow::stop_probe() {
  if (probe_ && !stalls_) stalls_ = probe_->stop();
}

v1::Usage UsageWindow::finish_closed(const std::string& label, const TreeReading& end) {
  return finish(label, &end);
}

v1::Usage UsageWindow::finish(const std::string& label, const TreeReading* given_end) {
  std::lock_guard lock(mutex_);
  v1::Usage f;
  f.set_label(label);
  f.set_machine_cpu_pct(-1);
  if (!open_) return f;
  open_ = false;
  TreeReading end = given_end ? *given_end : read_tree(reader_, root_);
  if (t1_ < 0) {
    t1_ = clock_();
    machine_end_ = reader_.machine_cpu();
    read_delays();
  }
  stop_probe();
  const double window_s = t1_ - t0_;
  f.set_window_s(window_s);
  f.set_opened_ns(std::llround(t0_ * 1e9));
  f.set_closed_ns(std::llround(t1_ * 1e9));
  add_tree_figures(end, window_s, f);
  f.set_machine_cpu_pct(machine_pct(machine_start_, machine_end_));
  f.set_machine_cores(machine_end_ ? machine_end_->cores : 0);
  if (machine_start_ && machine_end_) add_cpu_figures(*machine_start_, *machine_end_, cpus_, f);
  f.set_cpus(cpus_);
  f.set_cpu_binding(cpu_binding_);
  add_wait_stalls_series(window_s, f);
  return f;
}

void UsageWindow::add_tree_figures(const TreeReading& end, double window_s, v1::Usage& f) {
  if (end.rss_kb > 0) {
    rss_sum_ += end.rss_kb;
    rss_peak_ = std::max(rss_peak_, end.rss_kb);
    anon_sum_ += end.rss_anon_kb;
    anon_peak_ = std::max(anon_peak_, end.rss_anon_kb);
    ++samples_;
  }
  auto pct = [&](double a, double b) {
    if (window_s <= 0 || b < a) return 0.0;
    return (b - a) / window_s * 100.0;
  };
  // The total is exact; user and system are split by their own deltas (each is a share of
  // the exact time by a tick ratio that may move between readings, so alone they may dip).
  const double cpu_pct = pct(start_.cpu_s(), end.cpu_s());
  double du = std::max(0.0, end.user_s - start_.user_s), ds = std::max(0.0, end.system_s - start_.system_s);
  double user_share = du + ds > 0 ? du / (du + ds) : 1.0;
  f.set_cpu_pct(cpu_pct);
  f.set_cpu_user_pct(cpu_pct * user_share);
  f.set_cpu_system_pct(cpu_pct - f.cpu_user_pct());
  f.set_rss_kb_mean(samples_ ? rss_sum_ / samples_ : 0);
  f.set_rss_kb_peak(rss_peak_);
  f.set_rss_anon_kb_mean(samples_ ? anon_sum_ / samples_ : 0);
  f.set_rss_anon_kb_peak(anon_peak_);
  f.set_samples(samples_);
  f.set_processes(end.processes);
}

void UsageWindow::add_wait_stalls_series(double window_s, v1::Usage& f) {
  if (delays_known_ && window_s > 0) {
    double waited = 0;
    for (auto& [tid, first_last] : delays_) waited += first_last.second - first_last.first;
    f.set_wait_pct(waited / window_s * 100.0);
  }
  if (stalls_) {
    f.set_stalls(stalls_->stalls);
    f.set_stall_max_ms(stalls_->longest_ms);
    f.set_stall_total_ms(stalls_->total_ms);
  }
  probe_.reset();
  for (auto& p : series_) {
    auto* point = f.add_series();
    point->set_t_s(p.t_s);
    point->set_cpu_pct(p.cpu_pct);
    point->set_rss_kb(p.rss_kb);
  }
  series_.clear();
}

}  // namespace loadlab::agent
