#include "agent_flags.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "loadlab/agent/job_user.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/flag_ranges.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

namespace {

// On an address other machines can reach, callers must be proven: by a client certificate
// (--tls-client-ca) or a token, and the token only over TLS. Server-only TLS proves who the agent
// is, not who calls it. Returns whether the agent serves a network without proving its callers
// (--insecure).
bool check_callers_proven(const AgentFlags& flags) {
  const auto& tls = flags.tls;
  if (!parse_endpoint(flags.listen) && flags.listen.rfind("unix:", 0) != 0)
    throw InputError("--listen", "must be HOST:PORT or unix:PATH, got \"" + flags.listen + "\"");
  if (tls.cert.empty() != tls.key.empty() || (!tls.client_ca.empty() && tls.cert.empty()))
    throw InputError("--tls-cert, --tls-key", "give both (and --tls-client-ca only with them)");
  const bool loopback = is_loopback_address(flags.listen);
  const bool insecure = flags.options.insecure;
  if (!loopback && !tls.enabled() && !insecure)
    throw InputError("--listen",
                     flags.listen +
                         " can be reached from the network: give --tls-cert, --tls-key and "
                         "--tls-client-ca (mutual TLS) and/or --token-file, or --insecure to serve "
                         "it without TLS");
  if (!loopback && tls.enabled() && tls.client_ca.empty() && flags.token_file.empty() && !insecure)
    throw InputError("--listen",
                     flags.listen +
                         " can be reached from the network, and TLS without --tls-client-ca proves "
                         "who this agent is, not who calls it: add --tls-client-ca (callers need a "
                         "certificate it signed) and/or --token-file (callers need the token), or "
                         "--insecure to serve anyone who can reach it");
  return !loopback && (!tls.enabled() || (tls.client_ca.empty() && flags.token_file.empty()));
}

// --job-user: a user this agent can switch to, who can run the agent's programs.
JobUser checked_job_user(const std::string& name, const std::string& bin_dir) {
  if (const auto missing = missing_job_user_capabilities(); !missing.empty())
    throw InputError("--job-user", "the agent runs as uid " + std::to_string(geteuid()) + " without " +
                                       fmt::format("{}", fmt::join(missing, ", ")) +
                                       "; start it as root, or with CAP_SETUID CAP_SETGID CAP_KILL "
                                       "CAP_CHOWN in its effective set (systemd: AmbientCapabilities=)");
  auto user = resolve_job_user(name, "--job-user");
  const auto dir = bin_dir.empty() ? executable_dir() : bin_dir;
  for (const char* program : {"loadlab-target", "loadlab-load"}) {
    if (auto why = check_job_user_runs(user, dir + "/" + program); !why.empty())
      throw InputError("--job-user", why +
                                         " (every folder above it must be searchable by that user: install "
                                         "the agent where they are, e.g. /usr/bin, or give --bin-dir)");
  }
  return user;
}

// --metrics-listen: the rules of --listen; served to a network without proven callers
// (--insecure), it is warned of as --listen is (main.cpp), with the address as given.
void check_metrics_listen(const AgentFlags& flags) {
  const bool token = !flags.token_file.empty();
  if (metrics::check_listen(flags.metrics_listen, metrics_tls(flags), token, flags.options.insecure,
                            "--metrics-listen",
                            "--tls-cert and --tls-key, with --tls-client-ca or --token-file"))
    component_logger("agent")->warn("{}", metrics::insecure_warning("--metrics-listen", flags.metrics_listen,
                                                                    metrics_tls(flags), token, "--insecure"));
}

// Who may call the agent, and what its jobs may reach: TLS, the token, the job user, the
// destinations of load.
void add_security_flags(CLI::App& app, AgentFlags& flags) {
  app.add_option("--tls-cert", flags.tls.cert, "PEM certificate chain: serve gRPC over TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", flags.tls.key, "PEM private key of --tls-cert")->check(CLI::ExistingFile);
  app.add_option("--tls-client-ca", flags.tls.client_ca,
                 "PEM CA: callers must present a client certificate it signed (mutual TLS)")
      ->check(CLI::ExistingFile);
  app.add_option("--token-file", flags.token_file,
                 "file holding a token every call must carry (authorization: Bearer TOKEN)")
      ->check(CLI::ExistingFile);
  app.add_flag("--insecure", flags.options.insecure,
               "serve a non-loopback --listen without proven callers: no TLS, or TLS with neither "
               "--tls-client-ca nor --token-file (warned at start and at every Describe)");
  app.add_flag("--allow-readable-credentials", flags.allow_readable_credentials,
               "use a --token-file or --tls-key that other users can read, or that another user owns "
               "(warned); refused otherwise");
  app.add_option("--job-user", flags.job_user,
                 "run the jobs (targets, load workers, clients) as this user, who cannot read the agent's "
                 "credentials or files; needs root, or CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_CHOWN");
  app.add_option("--allow-load-to", flags.allow_load_to,
                 "CIDRs load may be sent to (default: loopback, 127.0.0.0/8 ::1/128)");
}

// How much one job may ask for, and the test knobs.
void add_limit_flags(CLI::App& app, AgentFlags& flags) {
  namespace lim = loadlab::limits;
  auto& l = flags.options.limits;
  app.add_option("--max-threads", l.threads, "most threads a load or target may ask for")
      ->check(loadlab::number_in(1, lim::kMaxThreads));
  app.add_option("--max-connections", l.connections, "most connections a load may ask for")
      ->check(loadlab::number_in(1, static_cast<double>(lim::kMaxConnections)));
  app.add_option("--max-duration-s", l.duration_s,
                 "longest run of a load (seconds): its warm-up and duration together (a count of "
                 "requests is ended there)")
      ->check(loadlab::number_in(0.001, lim::kMaxDurationS));
  app.add_option("--max-rate", l.rate, "highest open-loop rate (requests/s) a load may ask for")
      ->check(loadlab::number_in(lim::kMinRatePerThread, lim::kMaxRate));
  app.add_option("--max-body-bytes", l.body_bytes, "largest request body or target body_size")
      ->check(loadlab::number_in(0, static_cast<double>(lim::kMaxResponseBodyBytes)));
  app.add_option("--max-processes", l.processes,
                 "most processes of one target (a target that forks is stopped past it; orphans and "
                 "daemons of the target count)")
      ->check(loadlab::number_in(1, lim::kMaxJobProcesses));
  app.add_option("--max-tasks", l.tasks,
                 "most processes and threads of one job, held by the kernel's pids controller where "
                 "there is one (a fork fails past it)")
      ->check(loadlab::number_in(16, lim::kMaxJobTasks));
  app.add_option(
         "--idle-timeout-s", l.idle_timeout_s,
         "end a call whose peer keeps it waiting this long (the controller sends a heartbeat every 5 s)")
      ->check(loadlab::number_in(lim::kMinIdleTimeoutS, lim::kMaxIdleTimeoutS));
  // Test knobs, not in --help: a clock offset and a slow warm-up (AgentOptions).
  app.add_option("--test-clock-offset-ms", flags.test_clock_offset_ms)
      ->check(loadlab::number_in(-86'400'000, 86'400'000))
      ->group("");
  app.add_option("--test-ready-delay-ms", flags.options.test_ready_delay_ms)
      ->check(loadlab::number_in(0, 600'000))
      ->group("");
}

}  // namespace

void add_agent_flags(CLI::App& app, AgentFlags& flags) {
  app.add_option("--listen", flags.listen, "HOST:PORT to serve gRPC on (port 0: any free port)");
  app.add_option(
      "--metrics-listen", flags.metrics_listen,
      "HOST:PORT to serve OpenMetrics text on, at /metrics (docs/agent.md, \"Metrics\"): the rules of "
      "--listen, over its TLS and token");
  app.add_option("--name", flags.options.name, "agent name shown to the controller");
  app.add_option("--bin-dir", flags.options.bin_dir, "folder holding loadlab-target and loadlab-load")
      ->check(CLI::ExistingDirectory);
  app.add_option("--advertise", flags.advertise,
                 "address targets bind and hand to load agents (default: the --listen address when it "
                 "names one, 127.0.0.1 when it is a wildcard or a unix socket)");
  app.add_option("--sample-interval-ms", flags.options.sample_interval_ms, "RSS sampling period")
      ->check(loadlab::number_in(10, 10000));
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, off");
  app.add_option("--catalog", flags.catalog_file, "JSON file naming the external targets this agent may run");
  app.add_option("--build-cache", flags.options.build_cache_dir,
                 "folder of the builds of targets built from a commit, the agent's own and not writable by "
                 "others (default: /var/cache/loadlab/builds for root, else $XDG_CACHE_HOME or ~/.cache, "
                 "/loadlab/builds)");
  app.add_option(
      "--perf", flags.options.perf,
      "the perf program that profiles jobs (a path, or a name on PATH); Describe says what it can do");
  app.add_option("--build-cache-mb", flags.options.build_cache_mb,
                 "most MiB the build cache holds; the least recently used builds go first")
      ->check(loadlab::number_in(1, 1 << 30));
  add_security_flags(app, flags);
  add_limit_flags(app, flags);
}

metrics::ServerTls metrics_tls(const AgentFlags& flags) {
  return {flags.tls.cert, flags.tls.key, flags.tls.client_ca};
}

// The address targets bind and hand to load agents: --advertise, else the address --listen names
// (an agent on a lab interface serves its targets there), else loopback (a wildcard names no
// one interface).
std::string target_host(const AgentFlags& flags) {
  if (!flags.advertise.empty()) return flags.advertise;
  const auto at = parse_endpoint(flags.listen);
  in6_addr address{};
  const bool numeric = at && (inet_pton(AF_INET, at->host.c_str(), &address) == 1 ||
                              inet_pton(AF_INET6, at->host.c_str(), &address) == 1);
  if (!numeric || at->host == "0.0.0.0" || at->host == "::") return flags.options.target_host;
  return at->host;
}

AgentOptions agent_options(const AgentFlags& flags) {
  AgentOptions options = flags.options;
  options.target_host = target_host(flags);
  options.insecure = check_callers_proven(flags);
  if (!flags.metrics_listen.empty()) check_metrics_listen(flags);
  options.test_clock_offset_ns = static_cast<int64_t>(flags.test_clock_offset_ms * 1e6);
  if (!flags.token_file.empty()) {
    check_secret_file(flags.token_file, "--token-file", flags.allow_readable_credentials);
    options.token_digest = read_token_digest(flags.token_file, "--token-file");
  }
  if (!flags.tls.key.empty()) check_secret_file(flags.tls.key, "--tls-key", flags.allow_readable_credentials);
  if (!flags.allow_load_to.empty())
    options.allow_load_to = NetworkList::parse(flags.allow_load_to, "--allow-load-to");
  if (!flags.job_user.empty()) options.job_user = checked_job_user(flags.job_user, options.bin_dir);
  if (!flags.catalog_file.empty()) {
    try {
      options.catalog = Catalog::load_file(flags.catalog_file);
    } catch (const InputError& e) {
      throw InputError("--catalog " + flags.catalog_file, e.what());
    }
  }
  return options;
}

}  // namespace loadlab::agent
