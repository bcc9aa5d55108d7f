#include "load_job.hpp"

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
  window_ = std::make_unique<UsageWindow>(proc_, child_->pid(), monotonic_seconds);
  window_->set_cpu_binding(child_->cpu_binding());
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
  if (ev.has_measure_start()) window_->start();
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
  if (!stream_->Write(ev)) {  // the controller is gone: so is the reason to load
    stop_tree(proc_, *child_, std::chrono::milliseconds(options_.stop_grace_ms));
    return Status(StatusCode::CANCELLED, "the controller's stream is gone");
  }
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
  if (!stream_->Write(ev)) return Status(StatusCode::CANCELLED, "the controller's stream is gone");
  return Status::OK;
}

}  // namespace loadlab::agent
