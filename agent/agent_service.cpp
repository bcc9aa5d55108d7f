#include "loadlab/agent/agent_service.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "call_deadlines.hpp"
#include "external_load_job.hpp"
#include "job_profile.hpp"
#include "load_job.hpp"
#include "loadlab/agent/cpu_binding.hpp"
#include "loadlab/agent/machine_fingerprint.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/agent/profiler.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "loadlab/clients/command_line.hpp"
#include "loadlab/load/load_spec.hpp"
#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/search_path.hpp"
#include "target_job.hpp"

namespace loadlab::agent {

namespace {

// What the agent's programs speak (AgentInfo.target_protocols and client_protocols, and the
// checks of HostTarget and RunLoad): the built-in target and load worker (nullptr) HTTP/1.1
// and HTTP/2, over TCP and TLS, and HTTP/3 over QUIC; the catalog's targets, what their entry lists (HTTP/1.1
// over TCP by default); its clients, what their tool speaks (agent/external_tools/command_line.hpp).
std::vector<v1::Protocol> served_by(const CatalogEntry& target) {
  if (target.builtin)
    return {v1::PROTOCOL_HTTP1, v1::PROTOCOL_HTTPS, v1::PROTOCOL_H2, v1::PROTOCOL_H2C, v1::PROTOCOL_H3};
  return target.protocols;
}
std::vector<v1::Protocol> spoken_by(const ClientEntry* client) {
  if (!client)
    return {v1::PROTOCOL_HTTP1, v1::PROTOCOL_HTTPS, v1::PROTOCOL_H2, v1::PROTOCOL_H2C, v1::PROTOCOL_H3};
  return clients::protocols_of(client->tool);
}

// A job's end, counted as a failure unless it went well or its caller ended it.
grpc::Status counted(JobSlot& slot, grpc::Status status) {
  if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) slot.count_failure();
  return status;
}

bool offers(const std::vector<v1::Protocol>& protocols, v1::Protocol p) {
  if (p == v1::PROTOCOL_UNSPECIFIED) p = v1::PROTOCOL_HTTP1;
  return std::find(protocols.begin(), protocols.end(), p) != protocols.end();
}

// The jobs' metric families: each slot's state and counts, and the running job's CPU, memory
// and processes.
std::vector<metrics::Family> job_families(ProcFsReader& proc,
                                          std::initializer_list<std::pair<const char*, JobSlot*>> slots) {
  using metrics::Family;
  using metrics::Type;
  Family running{
      "loadlab_agent_jobs_running", Type::kGauge, "Jobs running now, by kind (at most one of each).", "", {}};
  Family starts{
      "loadlab_agent_job_starts", Type::kCounter, "Jobs accepted since the agent started, by kind.", "", {}};
  Family failures{"loadlab_agent_job_failures",
                  Type::kCounter,
                  "Jobs that ended in an error (not ended by their caller), by kind.",
                  "",
                  {}};
  Family cpu{
      "loadlab_agent_job_cpu_seconds",
      Type::kCounter,
      "CPU time of the running job's processes since it started (its cgroup's, else its process tree's).",
      "seconds",
      {}};
  Family rss{"loadlab_agent_job_resident_bytes",
             Type::kGauge,
             "Resident memory of the running job's processes.",
             "bytes",
             {}};
  Family processes{"loadlab_agent_job_processes", Type::kGauge, "Processes of the running job.", "", {}};
  for (auto [kind, slot] : slots) {
    const metrics::Labels labels{{"kind", kind}};
    running.samples.push_back({labels, slot->busy() ? 1.0 : 0.0});
    starts.samples.push_back({labels, static_cast<double>(slot->starts())});
    failures.samples.push_back({labels, static_cast<double>(slot->failures())});
    if (const pid_t pid = slot->running(); pid > 0) {
      const auto tree = read_tree(proc, pid);
      if (tree.processes > 0) {
        cpu.samples.push_back({labels, tree.cpu_s()});
        rss.samples.push_back({labels, static_cast<double>(tree.rss_kb) * 1024});
        processes.samples.push_back({labels, static_cast<double>(tree.processes)});
      }
    }
  }
  std::vector<Family> out;
  for (auto* f : {&running, &starts, &failures, &cpu, &rss, &processes}) out.push_back(std::move(*f));
  return out;
}

}  // namespace

using grpc::Status;
using grpc::StatusCode;

std::string executable_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string default_build_cache_dir() {
  if (geteuid() == 0) return "/var/cache/loadlab/builds";
  const char* xdg = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  const std::string base = xdg && *xdg == '/' ? xdg : std::string(home && *home ? home : "/tmp") + "/.cache";
  return base + "/loadlab/builds";
}

AgentService::AgentService(AgentOptions options)
    : options_(std::move(options)), callers_(options_.token_digest) {
  if (options_.bin_dir.empty()) options_.bin_dir = executable_dir();
  if (options_.build_cache_dir.empty()) options_.build_cache_dir = default_build_cache_dir();
  builds_ = std::make_unique<BuildCache>(options_.build_cache_dir, options_.build_cache_mb << 20);
  const ProfilingSupport profiling = profiling_support(options_.perf, options_.job_user.has_value());
  options_.profiling.set_available(profiling.available);
  options_.profiling.set_kernel(profiling.kernel);
  options_.profiling.set_reason(profiling.reason);
  if (profiling.available) {
    component_logger("agent")->info("profiling with {}{}", options_.perf,
                                    profiling.kernel ? "" : " (user space only)");
    if (find_on_path("addr2line").empty())
      component_logger("agent")->warn(
          "no addr2line (Debian's binutils): profiles will not name inlined functions");
    for (const char* links : {"symlinks", "hardlinks"}) {
      int on = 1;
      std::ifstream(std::string("/proc/sys/fs/protected_") + links) >> on;
      if (on == 0)
        component_logger("agent")->warn(
            "fs.protected_{} is 0: a profiled job can make perf read a file through a link at "
            "/tmp/perf-PID.map (docs/security.md, \"Profiles\"); set it to 1",
            links);
    }
  } else {
    component_logger("agent")->info("no profiling: {}", profiling.reason);
  }
}

Status AgentService::Describe(grpc::ServerContext* ctx, const v1::DescribeRequest*, v1::AgentInfo* info) {
  if (auto st = callers_.check(*ctx, "Describe"); !st.ok()) return st;
  if (options_.insecure)
    component_logger("agent")->warn(
        "Describe from {}: this agent serves a network without proving its callers (--insecure)",
        describe_caller(*ctx));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  utsname u{};
  uname(&u);
  info->set_name(options_.name);
  info->set_version(LOADLAB_VERSION);
  info->set_commit(std::string(git_commit()));
  info->set_hostname(host);
  info->set_cores(std::thread::hardware_concurrency());
  info->set_memory_bytes(static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                         static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  info->set_kernel(std::string(u.sysname) + " " + u.release);
  *info->mutable_fingerprint() = read_fingerprint();
  info->set_cpu_model(info->fingerprint().cpu_model());
  info->set_allowed_cpus(allowed_cpus().to_string());
  info->set_cpu_binding(std::string(to_string(cpu_binding().mode)));
  for (auto& t : options_.catalog.names()) {
    info->add_catalog(t);
    if (options_.catalog.find(t)->source) info->add_source_targets(t);
    for (auto p : served_by(*options_.catalog.find(t)))
      (*info->mutable_target_protocols())[t].add_protocols(p);
  }
  for (auto& c : options_.catalog.client_names()) {
    info->add_clients(c);
    for (auto p : spoken_by(options_.catalog.find_client(c)))
      (*info->mutable_client_protocols())[c].add_protocols(p);
  }
  info->set_busy(target_slot_.busy() || load_slot_.busy());
  info->set_scheduled_start(true);
  info->set_process_control(std::string(to_string(proc_control().mode)));
  *info->mutable_profiling() = options_.profiling;
  return Status::OK;
}

Status AgentService::HostTarget(grpc::ServerContext* ctx,
                                grpc::ServerReaderWriter<v1::TargetEvent, v1::TargetCommand>* raw) {
  if (auto st = callers_.check(*ctx, "HostTarget"); !st.ok()) return st;
  CallDeadlines deadlines(*ctx, idle_timeout(), "HostTarget from " + describe_caller(*ctx), expiries_);
  WatchedStream<v1::TargetEvent, v1::TargetCommand> stream(*raw, deadlines);
  v1::TargetCommand cmd;
  if (!stream.Read(&cmd)) return Status(StatusCode::INVALID_ARGUMENT, "stream closed before a TargetSpec");
  if (!cmd.has_spec()) return Status(StatusCode::INVALID_ARGUMENT, "the first command must be a TargetSpec");
  const auto& spec = cmd.spec();
  try {
    validate_target_spec(spec);
    check_limits(spec, options_.limits);
    job_cpus(spec.cpus());
  } catch (const InputError& e) {
    return Status(StatusCode::INVALID_ARGUMENT, e.what());
  }
  if (auto st = check_profile_spec(spec.profile(), "profile"); !st.ok()) return st;
  const std::string name = spec.kind_case() == v1::TargetSpec::kCatalog ? spec.catalog() : spec.builtin();
  const CatalogEntry* entry = options_.catalog.find(name);
  if (!entry)
    return Status(StatusCode::NOT_FOUND,
                  "unknown target \"" + name + "\"; this agent knows: " + options_.catalog.names_joined());
  if (auto served = served_by(*entry); !offers(served, spec.protocol()))
    return Status(StatusCode::INVALID_ARGUMENT, "protocol: target \"" + name + "\" does not serve " +
                                                    std::string(proto::protocol_name(spec.protocol())) +
                                                    "; it serves " + proto::protocol_names(served));
  if (auto st = check_commit(spec, *entry); !st.ok()) return st;
  if (spec.has_body_size() && !entry->builtin)
    return Status(StatusCode::INVALID_ARGUMENT, "body_size: catalog target \"" + name +
                                                    "\" takes no body_size; only the built-in hello does");
  JobLease lease(target_slot_, std::chrono::milliseconds(options_.stop_grace_ms + 2000));
  if (!lease.owned())
    return Status(StatusCode::RESOURCE_EXHAUSTED, "agent " + options_.name + " already hosts a target");
  return counted(target_slot_, TargetJob(options_, proc_, *builds_, ctx, &stream).run(spec, *entry, lease));
}

Status AgentService::check_commit(const v1::TargetSpec& spec, const CatalogEntry& entry) {
  const std::string& name = entry.name;
  if (entry.source && spec.commit().empty())
    return Status(
        StatusCode::INVALID_ARGUMENT,
        "commit: target \"" + name + "\" is built from a commit; the spec must name one (a full sha)");
  if (!entry.source && !spec.commit().empty())
    return Status(
        StatusCode::INVALID_ARGUMENT,
        "commit: target \"" + name + "\" is not built from a commit (its catalog entry names no source)");
  return Status::OK;
}

Status AgentService::ResolveCommit(grpc::ServerContext* ctx, const v1::CommitQuery* query,
                                   v1::ResolvedCommit* resolved) {
  if (auto st = callers_.check(*ctx, "ResolveCommit"); !st.ok()) return st;
  const CatalogEntry* entry = options_.catalog.find(query->target());
  if (!entry)
    return Status(StatusCode::NOT_FOUND, "unknown target \"" + query->target() +
                                             "\"; this agent knows: " + options_.catalog.names_joined());
  if (!entry->source)
    return Status(
        StatusCode::FAILED_PRECONDITION,
        "target \"" + query->target() + "\" is not built from a commit (its catalog entry names no source)");
  try {
    *resolved = builds_->resolve(*entry->source, query->ref(), query->since());
    return Status::OK;
  } catch (const InputError& e) {
    return Status(StatusCode::INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return Status(StatusCode::UNAVAILABLE, "target " + query->target() + ": " + e.what());
  }
}

Status AgentService::RunLoad(grpc::ServerContext* ctx,
                             grpc::ServerReaderWriter<v1::LoadEvent, v1::LoadCommand>* raw) {
  if (auto st = callers_.check(*ctx, "RunLoad"); !st.ok()) return st;
  const std::string caller = describe_caller(*ctx);
  CallDeadlines deadlines(*ctx, idle_timeout(), "RunLoad from " + caller, expiries_);
  WatchedStream<v1::LoadEvent, v1::LoadCommand> stream(*raw, deadlines);
  v1::LoadCommand cmd;
  if (!stream.Read(&cmd) || !cmd.has_spec())
    return Status(StatusCode::INVALID_ARGUMENT, "the first command must be a LoadSpec");
  v1::LoadSpec& spec = *cmd.mutable_spec();
  // The worker's own rules: a spec accepted here is one the worker runs.
  try {
    load::validate_spec(spec);
    check_limits(spec, options_.limits);
    job_cpus(spec.cpus());
  } catch (const InputError& e) {
    return Status(StatusCode::INVALID_ARGUMENT, e.what());
  }
  try {
    check_load_destination(spec, options_.allow_load_to);
  } catch (const InputError& e) {
    component_logger("agent")->warn("refused RunLoad from {}: {}", caller, e.what());
    return Status(StatusCode::PERMISSION_DENIED, e.what());
  }
  if (auto st = check_profile_spec(spec.profile(), "profile"); !st.ok()) return st;
  const ClientEntry* client = nullptr;
  if (auto st = check_client(spec, &client); !st.ok()) return st;
  JobLease lease(load_slot_, std::chrono::milliseconds(options_.stop_grace_ms + 2000));
  if (!lease.owned())
    return Status(StatusCode::RESOURCE_EXHAUSTED, "agent " + options_.name + " already runs a load");
  // However it stops (a count of requests may take any time), a load ends within its whole
  // run (warm-up and duration, which check_limits held to --max-duration-s; a count's, that
  // limit) and a grace for start and stop.
  const double run_s = spec.stop_case() == v1::LoadSpec::kDurationS ? spec.warmup_s() + spec.duration_s()
                                                                    : options_.limits.duration_s;
  // A profiled load's usage waits for its profile to be folded.
  const int64_t profile_ms = spec.profile().frequency_hz() > 0 ? limits::kProfileAllowanceS * 1000 : 0;
  deadlines.limit_lifetime(std::chrono::milliseconds(static_cast<int64_t>(run_s * 1000) +
                                                     2 * options_.stop_grace_ms + 60'000 + profile_ms));
  if (client)
    return counted(load_slot_, ExternalLoadJob(options_, proc_, ctx, &stream).run(spec, *client, lease));
  return counted(load_slot_, LoadJob(options_, proc_, ctx, &stream).run(spec, lease));
}

Status AgentService::check_client(const v1::LoadSpec& spec, const ClientEntry** client) const {
  const std::string& name = spec.client();
  if (!name.empty() && name != "loadlab") {
    *client = options_.catalog.find_client(name);
    if (!*client) {
      std::string known;
      for (auto& n : options_.catalog.client_names()) known += (known.empty() ? "" : ", ") + n;
      return Status(StatusCode::NOT_FOUND, "unknown client \"" + name + "\"; this agent runs: " + known);
    }
    if (spec.scheduled_start())
      return Status(StatusCode::INVALID_ARGUMENT,
                    "scheduled_start: " + name +
                        " starts measuring when it is run; only the built-in worker (client loadlab) waits "
                        "for a scheduled start");
    try {
      clients::check_spec((*client)->tool, spec);  // what the tool cannot do as asked
    } catch (const InputError& e) {
      return Status(StatusCode::INVALID_ARGUMENT, name + ": " + e.what());
    }
  }
  if (auto spoken = spoken_by(*client); !offers(spoken, spec.protocol()))
    return Status(StatusCode::INVALID_ARGUMENT,
                  "protocol: client \"" + (name.empty() ? std::string("loadlab") : name) +
                      "\" does not speak " + std::string(proto::protocol_name(spec.protocol())) +
                      "; it speaks " + proto::protocol_names(spoken));
  return Status::OK;
}

std::chrono::milliseconds AgentService::idle_timeout() const {
  return std::chrono::seconds(options_.limits.idle_timeout_s);
}

std::vector<metrics::Family> AgentService::metrics() {
  using metrics::Family;
  using metrics::Type;
  std::vector<Family> out;
  out.push_back(
      {"loadlab_agent_build",
       Type::kInfo,
       "The agent's version, git commit and name.",
       "",
       {{{{"version", LOADLAB_VERSION}, {"commit", std::string(git_commit())}, {"name", options_.name}},
         1}}});
  for (auto& f : job_families(proc_, {{"target", &target_slot_}, {"load", &load_slot_}}))
    out.push_back(std::move(f));

  out.push_back(
      {"loadlab_agent_lease_expiries",
       Type::kCounter,
       "Calls the agent ended because their caller kept them waiting past the idle timeout (idle) or "
       "they ran past their lifetime (lifetime).",
       "",
       {{{{"reason", "idle"}}, static_cast<double>(expiries_.idle.load())},
        {{{"reason", "lifetime"}}, static_cast<double>(expiries_.lifetime.load())}}});
  out.push_back({"loadlab_agent_auth_refusals",
                 Type::kCounter,
                 "Requests refused for a missing or wrong token: gRPC calls, and metrics scrapes.",
                 "",
                 {{{{"endpoint", "grpc"}}, static_cast<double>(callers_.refusals())},
                  {{{"endpoint", "metrics"}}, static_cast<double>(metrics_refusals_.load())}}});
  return out;
}

}  // namespace loadlab::agent
