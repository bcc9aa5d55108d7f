#include "target_job.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "job_support.hpp"
#include "loadlab/agent/cpu_binding.hpp"
#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/self_signed_cert.hpp"
#include "loadlab/shared/sha256.hpp"
#include "periodic_sampler.hpp"

namespace loadlab::agent {

using grpc::Status;
using grpc::StatusCode;
using namespace std::chrono_literals;

namespace {

// A file's sha256, remembered while its size and modification time stay (a jar of a catalog
// target is hashed once, not at every repetition).
std::string file_digest(const std::string& path) {
  struct Known {
    std::filesystem::file_time_type mtime;
    uintmax_t size = 0;
    std::string digest;
  };
  static std::mutex mutex;
  static std::map<std::string, Known> known;
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(path, ec);
  auto size = std::filesystem::file_size(path, ec);
  if (ec) return "";
  std::lock_guard lock(mutex);
  auto& k = known[path];
  if (k.digest.empty() || k.mtime != mtime || k.size != size) k = {mtime, size, sha256_file(path)};
  return k.digest;
}

// What a nightly compares across nights (Started.build): the built-in target's version and the
// hash of the binaries the agent runs (loadlab-target, and loadlab-target-secure and
// loadlab-target-h3, which it becomes for TLS and HTTP/3); a catalog target's command line as the catalog
// writes it (placeholders unfilled: the port changes every time), the bytes of every file it names, and its
// environment.
std::string target_build(const CatalogEntry& entry, const std::string& bin_dir) {
  if (entry.builtin) {
    Sha256 h;
    for (const char* program : {"/loadlab-target", "/loadlab-target-secure", "/loadlab-target-h3"})
      h.update(file_digest(bin_dir + program));
    return "loadlab-target " + std::string(version()) + " sha256:" + h.hex().substr(0, 16);
  }
  Sha256 h;
  for (auto& a : entry.argv) {
    h.update(a);
    h.update(std::string_view("\0", 1));
    std::filesystem::path p(a);
    if (p.is_relative() && !entry.cwd.empty()) p = std::filesystem::path(entry.cwd) / p;
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) h.update(file_digest(p.string()));
  }
  for (auto& [k, v] : entry.env) h.update(k + "=" + v + std::string(1, '\0'));
  return "sha256:" + h.hex().substr(0, 16);
}

}  // namespace

Status TargetJob::run(const v1::TargetSpec& spec, const CatalogEntry& catalog_entry, JobLease& lease) {
  const CatalogEntry* built_entry = &catalog_entry;
  CatalogEntry built;
  if (catalog_entry.source) {
    if (auto st = build(spec, catalog_entry, built); !st.ok()) return st;
    built_entry = &built;
  }
  const CatalogEntry& entry = *built_entry;
  if (auto st = prepare(spec, entry); !st.ok()) return st;
  if (auto st = prepare_instructions(spec, entry); !st.ok()) return st;
  if (auto st = launch(); !st.ok()) return st;
  lease.running(child_->pid());
  if (auto st = wait_ready(spec, entry); !st.ok()) return st;
  window_ = std::make_unique<UsageWindow>(proc_, child_->pid(), monotonic_seconds);
  window_->set_cpu_binding(child_->cpu_binding());
  profile_ = std::make_unique<JobProfile>(spec.profile(), options_.profiling, options_.perf,
                                          [ctx = ctx_] { return ctx->IsCancelled(); });
  {
    PeriodicSampler sampler(*window_, options_.sample_interval_ms, [this] { return on_sample(); });
    serve_marks();
    lease.stopping();
  }  // the sampler ends before the stop, so the exit we cause is not taken for a crash
  return stop();
}

Status TargetJob::build(const v1::TargetSpec& spec, const CatalogEntry& entry, CatalogEntry& built) {
  SpawnOptions job;  // the job user and task limit; the build may use every CPU
  job.user = options_.job_user_or_null();
  job.max_tasks = options_.limits.tasks;
  auto building = [&](int timeout_ms) {
    v1::TargetEvent ev;
    ev.mutable_building()->set_commit(spec.commit());
    ev.mutable_building()->set_timeout_ms(static_cast<uint32_t>(timeout_ms));
    write(ev);
  };
  try {
    auto b = builds_.get(*entry.source, spec.commit(), job, building, [this] { return ctx_->IsCancelled(); });
    pin_ = std::make_unique<BuildCache::Pin>(builds_, b.key);
    v1::TargetEvent ev;
    ev.mutable_built()->set_commit(spec.commit());
    ev.mutable_built()->set_cached(b.cached);
    ev.mutable_built()->set_seconds(b.seconds);
    ev.mutable_built()->set_size_bytes(b.bytes);
    write(ev);
    built = with_build_dir(entry, b.dir);
    return Status::OK;
  } catch (const BuildError& e) {
    if (ctx_->IsCancelled()) return Status(StatusCode::CANCELLED, "the controller cancelled the build");
    component_logger("agent")->warn("target {}: {}", spec.catalog(), e.what());
    return Status(StatusCode::FAILED_PRECONDITION, "target " + spec.catalog() + ": " + e.what());
  }
}

// The command line: the built-in target binds port 0 and says which port on its first line;
// a catalog target gets a port the agent reserved, through its placeholders.
Status TargetJob::prepare(const v1::TargetSpec& spec, const CatalogEntry& entry) {
  name_ = spec.kind_case() == v1::TargetSpec::kCatalog ? spec.catalog() : spec.builtin();
  try {
    spawn_options_.cpus = job_cpus(spec.cpus());  // checked by the service
    spawn_options_.max_tasks = options_.limits.tasks;
    spawn_options_.user = options_.job_user_or_null();
    // Threads 0: one per CPU the target may use.
    threads_ = spec.threads()                 ? spec.threads()
               : !spawn_options_.cpus.empty() ? spawn_options_.cpus.size()
                                              : std::max(1u, std::thread::hardware_concurrency());
    build_ = target_build(entry, options_.bin_dir);
    if (entry.builtin) {
      argv_ = {options_.bin_dir + "/loadlab-target",
               "--listen",
               Endpoint{options_.target_host, 0}.to_string(),
               "--threads",
               std::to_string(threads_),
               "--delay-ms",
               std::to_string(spec.delay_ms())};
      if (!spec.body().empty()) argv_.insert(argv_.end(), {"--body", spec.body()});
      if (spec.has_body_size()) argv_.insert(argv_.end(), {"--body-size", std::to_string(spec.body_size())});
      // Over TLS with a certificate of its own, made at start (TargetSpec.protocol).
      if (proto::uses_tls(spec.protocol())) argv_.push_back("--tls");
      // HTTP/3 also on UDP at the same port, with the same certificate.
      if (spec.protocol() == v1::PROTOCOL_H3) argv_.push_back("--h3");
      return Status::OK;
    }
    port_ = std::make_unique<PortReservation>(options_.target_host);
    Placeholders ph{options_.target_host, port_->port(), spec.delay_ms(), threads_,
                    std::string(proto::protocol_name(spec.protocol()))};
    if (entry.tls_files) {
      // A pair of its own for each job (the load workers do not verify it: a lab's targets
      // make their own), in a private folder removed with the job.
      std::string error;
      auto pair = loadlab::make_self_signed_cert(std::chrono::system_clock::now(), error);
      if (!pair) throw EnvironmentError("cannot make a certificate: " + error);
      files_ = std::make_unique<AuxFolder>(std::vector<JobFile>{{"cert.pem", pair->credentials.cert_pem},
                                                                {"key.pem", pair->credentials.key_pem}},
                                           options_.job_user_or_null());
      ph.tls_cert = files_->path() + "/cert.pem";
      ph.tls_key = files_->path() + "/key.pem";
    }
    for (auto& a : entry.argv) argv_.push_back(expand_placeholders(a, ph));
    for (auto& [k, v] : entry.env) spawn_options_.env.emplace_back(k, expand_placeholders(v, ph));
    spawn_options_.cwd = entry.cwd;
    endpoint_ = Endpoint{options_.target_host, port_->port()};
    return Status::OK;
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot prepare target: ") + e.what());
  }
}

Status TargetJob::prepare_instructions(const v1::TargetSpec& spec, const CatalogEntry& entry) {
  instructions_ = spec.instructions();
  if (instructions_ == v1::INSTRUCTIONS_NONE) return Status::OK;
  if (!entry.instructions_unavailable.empty()) {
    instructions_unavailable_ = "target " + name_ + ": " + entry.instructions_unavailable;
    return Status::OK;
  }
  if (instructions_ != v1::INSTRUCTIONS_CALLGRIND) return Status::OK;
  const std::string valgrind = find_valgrind();
  if (valgrind.empty()) {
    instructions_unavailable_ =
        "agent " + options_.name + " has no valgrind on its PATH (apt-get install valgrind)";
    return Status::OK;
  }
  try {
    callgrind_ = std::make_unique<CallgrindProbe>(valgrind, options_.job_user_or_null());
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot prepare target: ") + e.what());
  }
  argv_ = callgrind_->wrap(argv_);
  return Status::OK;
}

// The window's instructions:u, counted on every thread of the target from RESET to FINAL.
void TargetJob::count_window(const v1::Mark& mark, v1::Usage& usage) {
  if (instructions_ != v1::INSTRUCTIONS_COUNTERS) return;
  if (mark.kind() == v1::Mark::RESET) {
    if (instructions_unavailable_.empty()) counters_.open(child_->job_pids(proc_));
    return;
  }
  if (!instructions_unavailable_.empty()) {
    usage.set_instructions_unavailable(instructions_unavailable_);
  } else if (auto n = counters_.read()) {
    usage.set_instructions(*n);
  } else {
    usage.set_instructions_unavailable(counters_.reason());
  }
}

Status TargetJob::launch() {
  started_at_ = monotonic_seconds();
  try {
    child_ = ChildProcess::spawn(argv_, spawn_options_);
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot start target: ") + e.what());
  }
  component_logger("agent")->info("target {} pid {} started: {} threads", name_, child_->pid(), threads_);
  v1::TargetEvent ev;
  ev.mutable_started()->set_pid(child_->pid());
  ev.mutable_started()->set_build(build_);
  write(ev);
  return Status::OK;
}

Status TargetJob::wait_ready(const v1::TargetSpec& spec, const CatalogEntry& entry) {
  auto timeout =
      std::chrono::milliseconds(spec.start_timeout_ms() ? spec.start_timeout_ms() : entry.start_timeout_ms);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (entry.builtin) {
    std::string line;
    auto ls = child_->next_line(line, timeout);
    if (ls != ChildProcess::LineStatus::kLine || line.rfind("listening on ", 0) != 0)
      return fail_start(ls == ChildProcess::LineStatus::kTimeout ? "no 'listening on' line in time"
                                                                 : "no 'listening on' line");
    endpoint_ = parse_endpoint(line.substr(13));
    if (!endpoint_) return fail_start("cannot parse \"" + line + "\"");
  }
  const bool http = entry.readiness == CatalogEntry::Readiness::kHttp;
  while (!(http ? http_ready(*endpoint_, entry.http_path) : tcp_accepts(*endpoint_))) {
    if (child_->poll_exit()) return fail_start("it exited");
    if (std::chrono::steady_clock::now() > deadline)
      return fail_start(std::string(http ? "GET " + entry.http_path + " on " : "port ") +
                        endpoint_->to_string() + (http ? " gave no 2xx" : " accepted no connection") +
                        " within " + std::to_string(timeout.count()) + " ms");
    if (ctx_->IsCancelled()) return fail_start("the controller cancelled");
    std::this_thread::sleep_for(10ms);
  }
  v1::TargetEvent ev;
  ev.mutable_ready()->set_endpoint(endpoint_->to_string());
  ev.mutable_ready()->set_startup_ms(static_cast<uint32_t>((monotonic_seconds() - started_at_) * 1000));
  write(ev);
  component_logger("agent")->info("target pid {} ready on {}", child_->pid(), endpoint_->to_string());
  return Status::OK;
}

Status TargetJob::fail_start(const std::string& why) {
  auto st = child_->terminate(std::chrono::milliseconds(options_.stop_grace_ms));
  child_->wait_output_end(500ms);
  return Status(StatusCode::UNAVAILABLE, "target " + name_ + " did not become ready: " + why + " (" +
                                             st.describe() + "); last output:\n" + child_->output_tail());
}

std::optional<v1::TargetEvent> TargetJob::apply_mark(const v1::Mark& mark) {
  if (mark.kind() == v1::Mark::RESET) {
    window_->start();
    v1::Usage none;
    count_window(mark, none);
    profile_->start(child_->job_pids(proc_));
    return std::nullopt;
  }
  if (mark.kind() != v1::Mark::FINAL) return std::nullopt;
  const int64_t offset = options_.test_clock_offset_ns;
  v1::TargetEvent ev;
  *ev.mutable_usage() = window_->finish(mark.label());
  count_window(mark, *ev.mutable_usage());
  ev.mutable_usage()->set_opened_ns(ev.usage().opened_ns() + offset);
  ev.mutable_usage()->set_closed_ns(ev.usage().closed_ns() + offset);
  profile_->end_window();
  return ev;
}

void TargetJob::send_usage(v1::TargetEvent& ev) {
  if (auto profile = profile_->finish()) *ev.mutable_usage()->mutable_profile() = std::move(*profile);
  write(ev);
}

// Marks until the controller half-closes or cancels the stream.
void TargetJob::serve_marks() {
  v1::TargetCommand cmd;
  const int64_t offset = options_.test_clock_offset_ns;  // the clock this agent reports
  while (stream_->Read(&cmd)) {
    if (cmd.has_clock_probe()) {
      v1::TargetEvent ev;
      auto* echo = ev.mutable_clock_echo();
      echo->set_controller_ns(cmd.clock_probe().controller_ns());
      echo->set_received_ns(monotonic_ns() + offset);
      echo->set_sent_ns(monotonic_ns() + offset);
      write(ev);
      continue;
    }
    if (!cmd.has_mark()) continue;  // a second spec is ignored: one target per stream
    // A scheduled window: its instant in this agent's clock.
    if (cmd.mark().at_ns() != 0 && cmd.mark().kind() != v1::Mark::HEARTBEAT) {
      if (cmd.mark().kind() == v1::Mark::RESET) window_->prepare();
      // In slices, so that a cancelled call is not held for a whole window; at real-time
      // priority, so that the window opens (or closes) at the instant on a loaded machine.
      const int64_t at = cmd.mark().at_ns() - offset;
      std::optional<v1::TargetEvent> usage;
      {
        RealtimeScope on_time(kTargetWindowPriority);
        while (monotonic_ns() < at && !ctx_->IsCancelled())
          sleep_until_monotonic_ns(std::min(at, monotonic_ns() + 100'000'000));
        if (ctx_->IsCancelled()) return;
        usage = apply_mark(cmd.mark());
      }
      if (usage) send_usage(*usage);  // its profile folded at the agent's own priority
      continue;
    }
    if (auto usage = apply_mark(cmd.mark())) send_usage(*usage);
  }
}

bool TargetJob::on_sample() {
  auto st = child_->poll_exit();
  if (!st) {
    // The job's processes wherever they went: its cgroup, or every one carrying its mark
    // (an orphan is out of the tree but still the target's).
    const size_t processes = child_->job_pids(proc_).size();
    if (processes <= static_cast<size_t>(options_.limits.processes)) return true;
    // A target that forks without end must not take the agent's machine with it.
    over_limit_ = "the target has " + std::to_string(processes) + " processes, over this agent's limit of " +
                  std::to_string(options_.limits.processes) + " (loadlab-agent --max-processes)";
    component_logger("agent")->warn("target pid {}: {}; stopping it", child_->pid(), over_limit_);
    st = stop_tree(proc_, *child_, std::chrono::milliseconds(options_.stop_grace_ms));
  }
  // The target died under load: tell the controller why. The stream stays open: the
  // controller ends it (or the keepalive does, if the controller is gone).
  component_logger("agent")->warn("target pid {} exited early: {}", child_->pid(), st->describe());
  died_ = true;
  write_exited(*st, 20);
  return false;
}

Status TargetJob::stop() {
  // Under callgrind the target writes its output as it exits, which takes a while.
  const int grace =
      callgrind_ ? std::max(options_.stop_grace_ms, limits::kCallgrindStopGraceMs) : options_.stop_grace_ms;
  auto st = stop_tree(proc_, *child_, std::chrono::milliseconds(grace));
  component_logger("agent")->info("target pid {} stopped: {}", child_->pid(), st.describe());
  if (!over_limit_.empty()) return Status(StatusCode::RESOURCE_EXHAUSTED, "target stopped: " + over_limit_);
  if (died_) return Status(StatusCode::ABORTED, "target exited early: " + st.describe());
  if (!ctx_->IsCancelled()) write_exited(st, 5);
  return Status::OK;
}

bool TargetJob::write(const v1::TargetEvent& ev) {
  std::lock_guard lock(write_mutex_);
  if (stream_->Write(ev)) return true;
  component_logger("agent")->debug("target stream is gone; event not sent");
  return false;
}

void TargetJob::write_exited(const ExitStatus& st, size_t tail_lines) {
  // The reader of the child's output may not have drained the pipe yet when the child is
  // reaped: wait for its end (bounded: a stray holder of the pipe keeps it open).
  child_->wait_output_end(500ms);
  v1::TargetEvent ev;
  ev.mutable_exited()->set_exit_code(st.code);
  ev.mutable_exited()->set_signal(st.signal);
  ev.mutable_exited()->set_output_tail(child_->output_tail(tail_lines) +
                                       (over_limit_.empty() ? "" : "\n[loadlab-agent] " + over_limit_));
  if (instructions_ == v1::INSTRUCTIONS_CALLGRIND) {
    auto* exited = ev.mutable_exited();
    if (!callgrind_) {
      exited->set_instructions_unavailable(instructions_unavailable_);
    } else if (auto count = callgrind_->collect(); count.instructions) {
      exited->set_instructions(*count.instructions);
      exited->set_profile(std::move(count.profile));
    } else {
      exited->set_instructions_unavailable(count.unavailable);
    }
  }
  write(ev);
}

}  // namespace loadlab::agent
