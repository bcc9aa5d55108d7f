#include "load_job.hpp"

#include <signal.h>
#include <time.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <thread>

#include "job_support.hpp"
#include "loadlab/agent/cpu_binding.hpp"
#include "loadlab/load/load_spec.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/logging.hpp"
#include "periodic_sampler.hpp"

namespace loadlab::agent {

using grpc::Status;
using grpc::StatusCode;
using namespace std::chrono_literals;

namespace {

// The thread that reads a scheduled start's commands. It ends when the controller half-closes
// the stream; one that does not within a second of the job's end has its call cancelled (a
// stream may not outlive its handler).
class CommandReader {
 public:
  CommandReader(grpc::ServerContext& ctx, std::function<void()> read) : ctx_(ctx) {
    thread_ = std::thread([this, read = std::move(read)] {
      read();
      std::lock_guard lock(mutex_);
      done_ = true;
      cv_.notify_all();
    });
  }
  ~CommandReader() {
    {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, 1s, [this] { return done_; })) ctx_.TryCancel();
    }
    thread_.join();
  }
  CommandReader(const CommandReader&) = delete;
  CommandReader& operator=(const CommandReader&) = delete;

 private:
  grpc::ServerContext& ctx_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

int64_t LoadJob::now_ns() const { return monotonic_ns() + options_.test_clock_offset_ns; }

bool LoadJob::write(const v1::LoadEvent& ev) {
  std::lock_guard lock(write_mutex_);
  return stream_->Write(ev);
}

void LoadJob::read_commands() {
  v1::LoadCommand cmd;
  while (stream_->Read(&cmd)) {
    const int64_t received = now_ns();
    if (cmd.has_clock_probe()) {
      v1::LoadEvent ev;
      auto* echo = ev.mutable_clock_echo();
      echo->set_controller_ns(cmd.clock_probe().controller_ns());
      echo->set_received_ns(received);
      echo->set_sent_ns(now_ns());
      write(ev);
    } else if (cmd.has_start_at()) {
      // The worker opens its window at that instant of the machine's clock (loadlab-load
      // --start-on-signal): the value of a queued SIGUSR1.
      sigval value{};
      value.sival_ptr = reinterpret_cast<void*>(
          static_cast<intptr_t>(cmd.start_at().agent_ns() - options_.test_clock_offset_ns));
      if (!child_->queue_signal(SIGUSR1, value))
        component_logger("agent")->warn("load pid {}: cannot send its start: {}", child_->pid(),
                                        strerror(errno));
      else
        component_logger("agent")->debug("load pid {}: window opens in {:.1f} ms", child_->pid(),
                                         (cmd.start_at().agent_ns() - received) / 1e6);
      // The worker's usage window opens at the same instant, not at its MeasureStart (which
      // comes a pipe and a parse later).
      window_->prepare();
      const int64_t at = cmd.start_at().agent_ns() - options_.test_clock_offset_ns;
      RealtimeScope on_time(kLoadWindowPriority);
      while (monotonic_ns() < at && !ctx_->IsCancelled())
        sleep_until_monotonic_ns(std::min(at, monotonic_ns() + 100'000'000));
      if (ctx_->IsCancelled()) return;
      window_->start();
      profile_->start(child_->job_pids(proc_));
    }
  }
}

Status LoadJob::run(const v1::LoadSpec& spec, JobLease& lease) {
  std::vector<std::string> argv;
  std::unique_ptr<AuxFolder> body;  // the request body, in a file: execve takes 128 KiB per argument
  try {
    if (!spec.body().empty())
      body = std::make_unique<AuxFolder>(std::vector<JobFile>{{"body", spec.body()}},
                                         options_.job_user_or_null());
    argv = load::command_line(options_.bin_dir + "/loadlab-load", load::options_from_spec(spec),
                              body ? body->path() + "/body" : "");
    SpawnOptions spawn;
    spawn.cpus = job_cpus(spec.cpus());  // checked by the service
    spawn.max_tasks = options_.limits.tasks;
    spawn.user = options_.job_user_or_null();
    child_ = ChildProcess::spawn(argv, spawn);
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot start load worker: ") + e.what());
  }
  component_logger("agent")->info("load pid {} started against {}", child_->pid(), spec.endpoint());
  lease.running(child_->pid());
  window_ = std::make_unique<UsageWindow>(proc_, child_->pid(), monotonic_seconds);
  window_->set_cpu_binding(child_->cpu_binding());
  profile_ = std::make_unique<JobProfile>(spec.profile(), options_.profiling, options_.perf,
                                          [ctx = ctx_] { return ctx->IsCancelled(); });
  scheduled_ = spec.scheduled_start();
  std::optional<CommandReader> commands;
  if (scheduled_) commands.emplace(*ctx_, [this] { read_commands(); });
  {
    PeriodicSampler sampler(*window_, options_.sample_interval_ms, nullptr);
    if (auto st = relay_events(lease); !st.ok()) return st;
  }
  return finish();
}

// The worker's stdout, line by line, until it closes; a cancelled call stops the worker.
Status LoadJob::relay_events(JobLease& lease) {
  return read_lines_until_end(*child_, proc_, *ctx_, lease, std::chrono::milliseconds(options_.stop_grace_ms),
                              [this](const std::string& line) { return on_line(line); });
}

Status LoadJob::on_line(const std::string& line) {
  // The worker's stdout carries LoadEvent lines only (see agent.proto); anything else is a
  // broken worker, not a line to skip.
  v1::LoadEvent ev;
  std::string err;
  try {
    proto::from_json(line, &ev);
    if (ev.event_case() == v1::LoadEvent::kUsage || ev.event_case() == v1::LoadEvent::EVENT_NOT_SET)
      err = "no worker event";
  } catch (const InputError& e) {
    err = e.what();
  }
  if (!err.empty()) {
    stop_tree(proc_, *child_, std::chrono::milliseconds(options_.stop_grace_ms));
    return Status(StatusCode::INTERNAL,
                  "load worker printed a line that is not a LoadEvent (" + err + "): " + line.substr(0, 200));
  }
  if (ev.has_ready()) {
    if (options_.test_ready_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.test_ready_delay_ms));
    ev.mutable_ready()->set_agent_ns(now_ns());
  }
  if (ev.has_result() && ev.result().window_open_ns() != 0) {
    auto* r = ev.mutable_result();
    r->set_window_open_ns(r->window_open_ns() + options_.test_clock_offset_ns);
    r->set_window_close_ns(r->window_close_ns() + options_.test_clock_offset_ns);
  }
  if (ev.has_measure_start() && !scheduled_) {  // else opened by read_commands()
    window_->start();
    profile_->start(child_->job_pids(proc_));
  }
  if (ev.has_result()) {
    // The window ends here. The worker is usually still alive: read it now; if it has
    // already exited, its final CPU comes from wait4() in finish().
    auto now = read_tree(proc_, child_->pid());
    if (now.processes > 0)
      client_usage_ = window_->finish("load", &now);
    else
      window_->close_at_now();
    have_result_ = true;
  }
  if (!write(ev)) {  // the controller is gone: so is the reason to load
    stop_tree(proc_, *child_, std::chrono::milliseconds(options_.stop_grace_ms));
    return Status(StatusCode::CANCELLED, "the controller's stream is gone");
  }
  // After the result is on its way: stopping perf takes a while, and the target's window
  // closes when the results are in.
  if (ev.has_result()) profile_->end_window();
  return Status::OK;
}

Status LoadJob::finish() {
  // The worker's final CPU comes from wait4(): exact, and immune to the race with its exit.
  auto st = child_->wait_exit(std::chrono::milliseconds(options_.stop_grace_ms));
  if (!st)
    st = stop_tree(proc_, *child_,
                   std::chrono::milliseconds(options_.stop_grace_ms));  // slow to exit: no failure
  component_logger("agent")->info("load pid {} ended: {}", child_->pid(), st->describe());
  if (!have_result_ || (st->code != 0 && st->signal == 0)) {
    child_->wait_output_end(500ms);
    return Status(StatusCode::UNAVAILABLE,
                  "load worker failed (" + st->describe() + "); last output:\n" + child_->output_tail());
  }
  if (!client_usage_) {
    TreeReading end;
    end.user_s = st->user_s;
    end.system_s = st->system_s;
    client_usage_ = window_->finish_closed("load", end);
  }
  proc_.forget_exited();
  v1::LoadEvent ev;
  *ev.mutable_usage() = std::move(*client_usage_);
  if (auto profile = profile_->finish()) *ev.mutable_usage()->mutable_profile() = std::move(*profile);
  ev.mutable_usage()->set_opened_ns(ev.usage().opened_ns() + options_.test_clock_offset_ns);
  ev.mutable_usage()->set_closed_ns(ev.usage().closed_ns() + options_.test_clock_offset_ns);
  if (!write(ev)) return Status(StatusCode::CANCELLED, "the controller's stream is gone");
  return Status::OK;
}

}  // namespace loadlab::agent
