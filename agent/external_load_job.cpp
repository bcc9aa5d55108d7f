#include "external_load_job.hpp"

#include "job_support.hpp"
#include "loadlab/agent/cpu_binding.hpp"
#include "loadlab/clients/command_line.hpp"
#include "loadlab/clients/output.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/logging.hpp"
#include "periodic_sampler.hpp"

namespace loadlab::agent {

using grpc::Status;
using grpc::StatusCode;
using namespace std::chrono_literals;

Status ExternalLoadJob::run(const v1::LoadSpec& spec, const ClientEntry& client, JobLease& lease) {
  std::vector<std::string> argv;
  std::unique_ptr<AuxFolder> aux;
  try {
    std::vector<JobFile> files;
    for (auto& f : clients::aux_files(client.tool, spec)) files.push_back({f.name, f.content});
    aux = std::make_unique<AuxFolder>(files, options_.job_user_or_null());
    argv = clients::command_line(client.tool, client.path, spec, aux->path());
  } catch (const InputError& e) {
    return Status(StatusCode::INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot prepare ") + client.name + ": " + e.what());
  }
  profile_ = std::make_unique<JobProfile>(spec.profile(), options_.profiling, options_.perf,
                                          [ctx = ctx_] { return ctx->IsCancelled(); });
  if (auto st = launch(argv, spec.cpus()); !st.ok()) return st;
  lease.running(child_->pid());
  {
    PeriodicSampler sampler(*window_, options_.sample_interval_ms, nullptr);
    if (auto st = collect_output(lease); !st.ok()) return st;
  }
  return report(spec, client);
}

Status ExternalLoadJob::launch(const std::vector<std::string>& argv, const std::string& cpus) {
  try {
    SpawnOptions spawn;
    spawn.cpus = job_cpus(cpus);  // checked by the service
    spawn.max_tasks = options_.limits.tasks;
    spawn.user = options_.job_user_or_null();
    child_ = ChildProcess::spawn(argv, spawn);
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, "cannot start " + argv[0] + ": " + e.what());
  }
  component_logger("agent")->info("load pid {} started: {}", child_->pid(), argv[0]);
  window_ = std::make_unique<UsageWindow>(proc_, child_->pid(), monotonic_seconds);
  window_->set_cpu_binding(child_->cpu_binding());
  window_->start();  // the tool measures from its start: so do both usage windows, and its profile
  profile_->start({child_->pid()});
  v1::LoadEvent ev;
  ev.mutable_measure_start();
  if (!write(ev)) return Status(StatusCode::CANCELLED, "the controller's stream is gone");
  return Status::OK;
}

// The tool's stdout until it closes; a cancelled call stops the tool.
Status ExternalLoadJob::collect_output(JobLease& lease) {
  return read_lines_until_end(*child_, proc_, *ctx_, lease, std::chrono::milliseconds(options_.stop_grace_ms),
                              [this](const std::string& line) {
                                if (stdout_.size() < kMaxOutputBytes) stdout_ += line + "\n";
                                return Status::OK;
                              });
}

// The tool has closed its output: its exit, its report as the Result, then its usage.
Status ExternalLoadJob::report(const v1::LoadSpec& spec, const ClientEntry& client) {
  window_->close_at_now();
  auto st = child_->wait_exit(std::chrono::milliseconds(options_.stop_grace_ms));
  if (!st) st = stop_tree(proc_, *child_, std::chrono::milliseconds(options_.stop_grace_ms));
  child_->wait_output_end(500ms);
  component_logger("agent")->info("load pid {} ({}) ended: {}", child_->pid(), client.name, st->describe());
  v1::LoadEvent result;
  try {
    auto run = clients::parse_output(client.tool, stdout_, child_->output_tail(40),
                                     st->signal ? -st->signal : st->code);
    *result.mutable_result() = std::move(run.result);
  } catch (const clients::ToolFailed& e) {
    return Status(StatusCode::UNAVAILABLE, e.what());
  }
  // What the tool does not print, the spec says.
  auto* r = result.mutable_result();
  if (r->threads() == 0) r->set_threads(spec.threads());
  if (r->connections() == 0) r->set_connections(spec.connections() ? spec.connections() : spec.threads());
  if (!write(result)) return Status(StatusCode::CANCELLED, "the controller's stream is gone");
  TreeReading end;
  end.user_s = st->user_s;
  end.system_s = st->system_s;
  v1::LoadEvent usage;
  *usage.mutable_usage() = window_->finish_closed("load", end);
  profile_->end_window();  // perf has ended with the tool's last thread
  if (auto profile = profile_->finish()) *usage.mutable_usage()->mutable_profile() = std::move(*profile);
  proc_.forget_exited();
  if (!write(usage)) return Status(StatusCode::CANCELLED, "the controller's stream is gone");
  return Status::OK;
}

bool ExternalLoadJob::write(const v1::LoadEvent& ev) {
  if (stream_->Write(ev)) return true;
  stop_tree(proc_, *child_, std::chrono::milliseconds(options_.stop_grace_ms));  // no one to load for
  return false;
}

}  // namespace loadlab::agent
