#include "loadlab/agent/agent_service.hpp"

#include <netdb.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>


#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/ports.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "load_spec.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

using grpc::Status;
using grpc::StatusCode;
using namespace std::chrono_literals;

namespace {

// Holds a job slot for the lifetime of a job.
class BusyGuard {
 public:
  BusyGuard(JobSlot& slot, std::chrono::milliseconds wait) : slot_(slot), owned_(slot.acquire(wait)) {}
  ~BusyGuard() {
    if (owned_) slot_.release();
  }
  bool owned() const { return owned_; }
  void stopping() {
    if (owned_) slot_.mark_stopping();
  }

 private:
  JobSlot& slot_;
  bool owned_;
};

// Samples a usage window periodically on its own thread until stopped. `on_tick` runs
// after each sample (e.g. to notice that the child died).
class PeriodicSampler {
 public:
  PeriodicSampler(UsageWindow& window, int interval_ms, std::function<bool()> on_tick)
      : thread_([this, &window, interval_ms, on_tick = std::move(on_tick)] {
          std::unique_lock lock(mutex_);
          while (!stop_) {
            cv_.wait_for(lock, std::chrono::milliseconds(interval_ms));
            if (stop_) break;
            lock.unlock();
            window.sample();
            bool go_on = !on_tick || on_tick();
            lock.lock();
            if (!go_on) break;
          }
        }) {}
  ~PeriodicSampler() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

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

std::string read_first_match(const char* path, const std::string& prefix) {
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (line.rfind(prefix, 0) == 0) {
      auto colon = line.find(':');
      auto v = colon == std::string::npos ? std::string() : line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

}  // namespace

bool JobSlot::acquire(std::chrono::milliseconds wait_for_stopping) {
  // A holder whose call was just cancelled notices within its polling period (100 ms) and
  // then stops its child: give it a moment to say so, then wait for the stop to finish.
  const auto now = std::chrono::steady_clock::now();
  const auto notice_deadline = now + std::chrono::milliseconds(500);
  const auto stop_deadline = now + wait_for_stopping;
  std::unique_lock lock(mutex_);
  while (busy_) {
    auto t = std::chrono::steady_clock::now();
    if (t >= stop_deadline || (!stopping_ && t >= notice_deadline)) break;
    cv_.wait_until(lock, stopping_ ? stop_deadline : notice_deadline);
  }
  if (busy_) return false;
  busy_ = true;
  stopping_ = false;
  return true;
}

void JobSlot::mark_stopping() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void JobSlot::release() {
  {
    std::lock_guard lock(mutex_);
    busy_ = false;
    stopping_ = false;
  }
  cv_.notify_all();
}

bool JobSlot::busy() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

std::string executable_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

AgentService::AgentService(AgentOptions options) : options_(std::move(options)) {
  if (options_.bin_dir.empty()) options_.bin_dir = executable_dir();
}

ExitStatus AgentService::stop_tree(ChildProcess& child) {
  // Descendants that left the process group (setsid, daemonising servers) are not reached
  // by the group kill: find them first, kill them after.
  auto pids = tree_pids(proc_, child.pid());
  auto st = child.terminate(std::chrono::milliseconds(options_.stop_grace_ms));
  for (pid_t p : pids)
    if (p != child.pid()) kill(p, SIGKILL);
  proc_.forget_exited();
  return st;
}

Status AgentService::Describe(grpc::ServerContext*, const v1::DescribeRequest*, v1::AgentInfo* info) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  utsname u{};
  uname(&u);
  info->set_name(options_.name);
  info->set_version(LOADLAB_VERSION);
  info->set_hostname(host);
  info->set_cores(std::thread::hardware_concurrency());
  info->set_memory_bytes(static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  info->set_kernel(std::string(u.sysname) + " " + u.release);
  info->set_cpu_model(read_first_match("/proc/cpuinfo", "model name"));
  for (auto& t : options_.catalog.names()) info->add_catalog(t);
  info->add_protocols("http/1.1");
  info->set_busy(target_slot_.busy() || load_slot_.busy());
  return Status::OK;
}

Status AgentService::HostTarget(grpc::ServerContext* ctx,
                                grpc::ServerReaderWriter<v1::TargetEvent, v1::TargetCommand>* stream) {
  auto log = component_logger("agent");
  v1::TargetCommand cmd;
  if (!stream->Read(&cmd)) return Status(StatusCode::INVALID_ARGUMENT, "stream closed before a TargetSpec");
  if (!cmd.has_spec()) return Status(StatusCode::INVALID_ARGUMENT, "the first command must be a TargetSpec");
  const auto& spec = cmd.spec();
  const std::string name = spec.kind_case() == v1::TargetSpec::kCatalog ? spec.catalog() : spec.builtin();
  const CatalogEntry* entry = options_.catalog.find(name);
  if (!entry)
    return Status(StatusCode::NOT_FOUND,
                  "unknown target \"" + name + "\"; this agent knows: " + options_.catalog.names_joined());
  if (spec.delay_ms() > 60000) return Status(StatusCode::INVALID_ARGUMENT, "delay_ms: must be 0..60000");
  if (spec.threads() > 1024) return Status(StatusCode::INVALID_ARGUMENT, "threads: must be 0..1024");
  const auto wait_for_stopping = std::chrono::milliseconds(options_.stop_grace_ms + 2000);
  BusyGuard busy(target_slot_, wait_for_stopping);
  if (!busy.owned()) return Status(StatusCode::RESOURCE_EXHAUSTED, "agent " + options_.name + " already hosts a target");

  unsigned threads = spec.threads() ? spec.threads() : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> argv;
  SpawnOptions spawn_options;
  std::unique_ptr<PortReservation> port;  // held while the target runs
  std::optional<Endpoint> ep;
  try {
    if (entry->builtin) {
      // Port 0: the target binds any free port and says which on its first line.
      argv = {options_.bin_dir + "/loadlab-target", "--listen",   Endpoint{options_.target_host, 0}.to_string(),
              "--threads",                          std::to_string(threads), "--delay-ms",
              std::to_string(spec.delay_ms())};
      if (!spec.body().empty()) argv.insert(argv.end(), {"--body", spec.body()});
    } else {
      port = std::make_unique<PortReservation>(options_.target_host);
      Placeholders ph{options_.target_host, port->port(), spec.delay_ms(), threads};
      for (auto& a : entry->argv) argv.push_back(expand_placeholders(a, ph));
      for (auto& [k, v] : entry->env) spawn_options.env.emplace_back(k, expand_placeholders(v, ph));
      spawn_options.cwd = entry->cwd;
      ep = Endpoint{options_.target_host, port->port()};
    }
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot prepare target: ") + e.what());
  }
  auto t_start = monotonic_seconds();
  std::unique_ptr<ChildProcess> child;
  try {
    child = ChildProcess::spawn(argv, spawn_options);
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot start target: ") + e.what());
  }
  log->info("target {} pid {} started: delay {} ms, {} threads", name, child->pid(), spec.delay_ms(), threads);
  std::mutex write_mutex;  // the sampler thread writes too
  {
    v1::TargetEvent ev;
    ev.mutable_started()->set_pid(child->pid());
    stream->Write(ev);
  }
  auto timeout = std::chrono::milliseconds(spec.start_timeout_ms() ? spec.start_timeout_ms() : entry->start_timeout_ms);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto fail_start = [&](const std::string& why) {
    auto st = child->terminate(std::chrono::milliseconds(options_.stop_grace_ms));
    child->wait_output_end(500ms);
    return Status(StatusCode::UNAVAILABLE, "target " + name + " did not become ready: " + why + " (" +
                                               st.describe() + "); last output:\n" + child->output_tail());
  };
  if (entry->builtin) {
    std::string line;
    auto ls = child->next_line(line, timeout);
    if (ls != ChildProcess::LineStatus::kLine || line.rfind("listening on ", 0) != 0)
      return fail_start(ls == ChildProcess::LineStatus::kTimeout ? "no 'listening on' line in time"
                                                                 : "no 'listening on' line");
    ep = parse_endpoint(line.substr(13));
    if (!ep) return fail_start("cannot parse \"" + line + "\"");
  }
  const bool http = entry->readiness == CatalogEntry::Readiness::kHttp;
  while (!(http ? http_ready(*ep, entry->http_path) : tcp_accepts(*ep))) {
    if (child->poll_exit()) return fail_start("it exited");
    if (std::chrono::steady_clock::now() > deadline)
      return fail_start(std::string(http ? "GET " + entry->http_path + " on " : "port ") + ep->to_string() +
                        (http ? " gave no 2xx" : " accepted no connection") + " within " +
                        std::to_string(timeout.count()) + " ms");
    if (ctx->IsCancelled()) return fail_start("the controller cancelled");
    std::this_thread::sleep_for(10ms);
  }
  {
    v1::TargetEvent ev;
    ev.mutable_ready()->set_endpoint(ep->to_string());
    ev.mutable_ready()->set_startup_ms(static_cast<uint32_t>((monotonic_seconds() - t_start) * 1000));
    std::lock_guard lock(write_mutex);
    stream->Write(ev);
  }
  log->info("target pid {} ready on {}", child->pid(), ep->to_string());

  UsageWindow window(proc_, child->pid(), monotonic_seconds);
  std::atomic<bool> died{false};
  std::optional<PeriodicSampler> sampler;
  sampler.emplace(window, options_.sample_interval_ms, [&] {
    auto st = child->poll_exit();
    if (!st) return true;
    // The target died under load: tell the controller why, then end the stream.
    log->warn("target pid {} exited early: {}", child->pid(), st->describe());
    died = true;
    v1::TargetEvent ev;
    ev.mutable_exited()->set_exit_code(st->code);
    ev.mutable_exited()->set_signal(st->signal);
    ev.mutable_exited()->set_output_tail(child->output_tail());
    std::lock_guard lock(write_mutex);
    stream->Write(ev);
    // The stream stays open: the controller ends it (and the keepalive, if it is gone).
    return false;
  });

  while (stream->Read(&cmd)) {
    if (!cmd.has_mark()) continue;  // a second spec is ignored: one target per stream
    if (cmd.mark().kind() == v1::Mark::RESET) {
      window.start();
    } else if (cmd.mark().kind() == v1::Mark::FINAL) {
      v1::TargetEvent ev;
      fill_usage(window.finish(), cmd.mark().label(), ev.mutable_usage());
      std::lock_guard lock(write_mutex);
      stream->Write(ev);
    }
  }
  busy.stopping();
  sampler.reset();  // before the stop, so the exit we cause is not taken for a crash
  auto st = stop_tree(*child);
  log->info("target pid {} stopped: {}", child->pid(), st.describe());
  if (died) return Status(StatusCode::ABORTED, "target exited early: " + st.describe());
  if (!ctx->IsCancelled()) {
    v1::TargetEvent ev;
    ev.mutable_exited()->set_exit_code(st.code);
    ev.mutable_exited()->set_signal(st.signal);
    ev.mutable_exited()->set_output_tail(child->output_tail(5));
    std::lock_guard lock(write_mutex);
    stream->Write(ev);
  }
  return Status::OK;
}

Status AgentService::RunLoad(grpc::ServerContext* ctx, grpc::ServerReaderWriter<v1::LoadEvent, v1::LoadCommand>* stream) {
  auto log = component_logger("agent");
  v1::LoadCommand cmd;
  if (!stream->Read(&cmd) || !cmd.has_spec())
    return Status(StatusCode::INVALID_ARGUMENT, "the first command must be a LoadSpec");
  const auto& spec = cmd.spec();
  if (auto err = load::validate_spec(spec); !err.empty()) return Status(StatusCode::INVALID_ARGUMENT, err);
  BusyGuard busy(load_slot_, std::chrono::milliseconds(options_.stop_grace_ms + 2000));
  if (!busy.owned()) return Status(StatusCode::RESOURCE_EXHAUSTED, "agent " + options_.name + " already runs a load");

  auto argv = load::command_line(options_.bin_dir + "/loadlab-load", load::options_from_spec(spec));
  std::unique_ptr<ChildProcess> child;
  try {
    child = ChildProcess::spawn(argv);
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, std::string("cannot start load worker: ") + e.what());
  }
  log->info("load pid {} started against {}", child->pid(), spec.endpoint());
  UsageWindow window(proc_, child->pid(), monotonic_seconds);
  PeriodicSampler sampler(window, options_.sample_interval_ms, nullptr);

  bool have_result = false;
  std::optional<UsageFigures> client_usage;
  std::string line;
  for (;;) {
    auto ls = child->next_line(line, 100ms);
    if (ctx->IsCancelled()) {
      busy.stopping();
      stop_tree(*child);
      return Status(StatusCode::CANCELLED, "load cancelled");
    }
    if (ls == ChildProcess::LineStatus::kEof) break;
    if (ls != ChildProcess::LineStatus::kLine) continue;
    // The worker's stdout carries LoadEvent lines only (see agent.proto); anything else is
    // a broken worker, not a line to skip.
    v1::LoadEvent ev;
    if (auto err = proto::from_json(line, &ev); !err.empty() || ev.event_case() == v1::LoadEvent::kUsage ||
                                                 ev.event_case() == v1::LoadEvent::EVENT_NOT_SET) {
      stop_tree(*child);
      return Status(StatusCode::INTERNAL, "load worker printed a line that is not a LoadEvent (" +
                                              (err.empty() ? std::string("no event") : err) + "): " +
                                              line.substr(0, 200));
    }
    if (ev.has_measure_start()) {
      window.start();
    } else if (ev.has_result()) {
      // The window ends here. The worker is usually still alive: read it now; if it has
      // already exited, its final CPU comes from wait4() below.
      auto now = read_tree(proc_, child->pid());
      if (now.processes > 0) client_usage = window.finish(&now);
      else window.close_at_now();
      have_result = true;
    }
    stream->Write(ev);
  }
  // The worker's final CPU comes from wait4(): exact, and immune to the race with its exit.
  auto st = child->wait_exit(std::chrono::milliseconds(options_.stop_grace_ms));
  if (!st) st = stop_tree(*child);  // slow to exit after its result: that is not a failure
  log->info("load pid {} ended: {}", child->pid(), st->describe());
  if (!have_result || (st->code != 0 && st->signal == 0)) {
    child->wait_output_end(500ms);
    return Status(StatusCode::UNAVAILABLE,
                  "load worker failed (" + st->describe() + "); last output:\n" + child->output_tail());
  }
  if (!client_usage) {
    TreeReading end;
    end.user_s = st->user_s;
    end.system_s = st->system_s;
    client_usage = window.finish_closed(end);
  }
  proc_.forget_exited();
  v1::LoadEvent ev;
  fill_usage(*client_usage, "load", ev.mutable_usage());
  stream->Write(ev);
  return Status::OK;
}

AgentServer::AgentServer(AgentOptions options) : service_(std::move(options)) {}

AgentServer::~AgentServer() {
  if (server_) shutdown(0);
}

std::string AgentServer::start(const std::string& listen) {
  // Targets and workers inherit the limit: a target at thousands of connections must not
  // measure the agent's soft limit of open files.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service_);
  // A controller that vanished is noticed by keepalive pings: its streams are then
  // cancelled and their children stopped.
  // Two agents must never share a port: no SO_REUSEPORT.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  server_ = builder.BuildAndStart();
  if (!server_ || (port == 0 && listen.rfind("unix:", 0) != 0))
    throw std::runtime_error("cannot listen on " + listen);
  if (listen.rfind("unix:", 0) == 0) return listen;
  auto ep = parse_endpoint(listen);
  return Endpoint{ep ? ep->host : "127.0.0.1", static_cast<uint16_t>(port)}.to_string();
}

void AgentServer::shutdown(int grace_ms) {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(grace_ms));
  server_->Wait();
  server_.reset();
}

void AgentServer::wait() {
  if (server_) server_->Wait();
}

}  // namespace loadlab::agent
