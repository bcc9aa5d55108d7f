// loadlab-agent: the daemon on each lab machine. Parses flags, serves, stops on a signal.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/job_processes.hpp"
#include "loadlab/agent/job_user.hpp"
#include "loadlab/agent/pids_limit.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/flag_ranges.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"

int main(int argc, char** argv) {
  loadlab::agent::AgentOptions options;
  std::string listen = "127.0.0.1:7700";
  std::string log_level = "info";
  CLI::App app{"loadlab-agent: hosts targets and runs load workers for the loadlab controller"};
  app.set_version_flag("--version", loadlab::version_line("loadlab-agent"));
  app.add_option("--listen", listen, "HOST:PORT to serve gRPC on (port 0: any free port)");
  app.add_option("--name", options.name, "agent name shown to the controller");
  app.add_option("--bin-dir", options.bin_dir, "folder holding loadlab-target and loadlab-load")
      ->check(CLI::ExistingDirectory);
  app.add_option("--advertise", options.target_host, "address targets bind and hand to load agents");
  app.add_option("--sample-interval-ms", options.sample_interval_ms, "RSS sampling period")
      ->check(loadlab::number_in(10, 10000));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  std::string catalog_file;
  app.add_option("--catalog", catalog_file, "JSON file naming the external targets this agent may run");
  loadlab::agent::TlsFiles tls;
  app.add_option("--tls-cert", tls.cert, "PEM certificate chain: serve gRPC over TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", tls.key, "PEM private key of --tls-cert")->check(CLI::ExistingFile);
  app.add_option("--tls-client-ca", tls.client_ca,
                 "PEM CA: callers must present a client certificate it signed (mutual TLS)")
      ->check(CLI::ExistingFile);
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "file holding a token every call must carry (authorization: Bearer TOKEN)")
      ->check(CLI::ExistingFile);
  app.add_flag("--insecure", options.insecure,
               "serve a non-loopback --listen without proven callers: no TLS, or TLS with neither "
               "--tls-client-ca nor --token-file (warned at start and at every Describe)");
  bool allow_readable_credentials = false;
  app.add_flag("--allow-readable-credentials", allow_readable_credentials,
               "use a --token-file or --tls-key that other users can read, or that another user owns "
               "(warned); refused otherwise");
  std::string job_user;
  app.add_option("--job-user", job_user,
                 "run the jobs (targets, load workers, clients) as this user, who cannot read the agent's "
                 "credentials or files; needs root, or CAP_SETUID and CAP_SETGID");
  std::vector<std::string> allow_load_to;
  app.add_option("--allow-load-to", allow_load_to,
                 "CIDRs load may be sent to (default: loopback, 127.0.0.0/8 ::1/128)");
  namespace lim = loadlab::limits;
  auto& l = options.limits;
  app.add_option("--max-threads", l.threads, "most threads a load or target may ask for")
      ->check(loadlab::number_in(1, lim::kMaxThreads));
  app.add_option("--max-connections", l.connections, "most connections a load may ask for")
      ->check(loadlab::number_in(1, static_cast<double>(lim::kMaxConnections)));
  app.add_option("--max-duration-s", l.duration_s, "longest load (seconds); also caps a load's whole run")
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!loadlab::init_logging(log_level)) {
    std::cerr << "--log-level: must be one of trace, debug, info, warn, error, off\n";
    return 2;
  }
  // Orphans of the jobs' processes come to the agent (a child subreaper; as PID 1 in a
  // container they come anyway): it reaps them below and kills them with their job (by the
  // job's mark, job_processes.hpp).
  if (!loadlab::agent::become_subreaper())
    loadlab::component_logger("agent")->warn("cannot become a child subreaper: {}", std::strerror(errno));
  loadlab::agent::proc_control();  // chosen (and logged) now, not at the first job
  loadlab::agent::pids_limit_place();
  if (!loadlab::parse_endpoint(listen) && listen.rfind("unix:", 0) != 0) {
    std::cerr << "--listen: must be HOST:PORT or unix:PATH, got \"" << listen << "\"\n";
    return 2;
  }
  if (tls.cert.empty() != tls.key.empty() || (!tls.client_ca.empty() && tls.cert.empty())) {
    std::cerr << "--tls-cert, --tls-key: give both (and --tls-client-ca only with them)\n";
    return 2;
  }
  // On an address other machines can reach, callers must be proven: by a client certificate
  // (--tls-client-ca) or a token, and the token only over TLS. Server-only TLS proves who the
  // agent is, not who calls it.
  const bool loopback = loadlab::is_loopback_address(listen);
  if (!loopback && !tls.enabled() && !options.insecure) {
    std::cerr << "--listen: " << listen
              << " can be reached from the network: give --tls-cert, --tls-key and --tls-client-ca (mutual "
                 "TLS) and/or --token-file, or --insecure to serve it without TLS\n";
    return 2;
  }
  if (!loopback && tls.enabled() && tls.client_ca.empty() && token_file.empty() && !options.insecure) {
    std::cerr
        << "--listen: " << listen
        << " can be reached from the network, and TLS without --tls-client-ca proves who this agent is, "
           "not who calls it: add --tls-client-ca (callers need a certificate it signed) and/or "
           "--token-file (callers need the token), or --insecure to serve anyone who can reach it\n";
    return 2;
  }
  options.insecure = !loopback && (!tls.enabled() || (tls.client_ca.empty() && token_file.empty()));
  try {
    if (!token_file.empty()) {
      loadlab::agent::check_secret_file(token_file, "--token-file", allow_readable_credentials);
      options.token = loadlab::agent::read_token_file(token_file, "--token-file");
    }
    if (!tls.key.empty()) loadlab::agent::check_secret_file(tls.key, "--tls-key", allow_readable_credentials);
    if (!allow_load_to.empty())
      options.allow_load_to = loadlab::agent::NetworkList::parse(allow_load_to, "--allow-load-to");
    if (!job_user.empty()) {
      if (!loadlab::agent::can_switch_users())
        throw loadlab::InputError("--job-user",
                                  "the agent runs as uid " + std::to_string(geteuid()) +
                                      " without CAP_SETUID and CAP_SETGID; start it as root (or with those "
                                      "capabilities) to run its jobs as another user");
      options.job_user = loadlab::agent::resolve_job_user(job_user, "--job-user");
      const auto bin_dir = options.bin_dir.empty() ? loadlab::agent::executable_dir() : options.bin_dir;
      for (const char* program : {"loadlab-target", "loadlab-load"}) {
        if (auto why = loadlab::agent::check_job_user_runs(*options.job_user, bin_dir + "/" + program);
            !why.empty())
          throw loadlab::InputError(
              "--job-user", why +
                                " (every folder above it must be searchable by that user: install the "
                                "agent where they are, e.g. /usr/bin, or give --bin-dir)");
      }
    }
  } catch (const loadlab::InputError& e) {
    std::cerr << "loadlab-agent: " << e.what() << "\n";
    return 2;
  }
  if (!catalog_file.empty()) {
    try {
      options.catalog = loadlab::agent::Catalog::load_file(catalog_file);
    } catch (const loadlab::InputError& e) {
      std::cerr << "loadlab-agent: --catalog " << catalog_file << ": " << e.what() << "\n";
      return 2;
    }
  }
  // Signals are taken by one thread with sigwait: no work in a signal handler.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs,
            SIGCHLD);  // an adopted orphan exited: reap it (own children are waited for by their owners)
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto log = loadlab::component_logger("agent");
  loadlab::agent::AgentServer server(options);
  std::string bound;
  try {
    bound = server.start(listen, tls);
  } catch (const loadlab::InputError& e) {
    std::cerr << "loadlab-agent: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "loadlab-agent: " << e.what() << "\n";
    return 1;
  }
  log->info("agent {} serving on {} ({}{}); load may go to {}", options.name, bound,
            tls.enabled() ? (tls.client_ca.empty() ? "TLS" : "mutual TLS") : "no TLS",
            options.token.empty() ? "" : ", token required", options.allow_load_to.to_string());
  if (options.job_user)
    log->info("jobs run as user {} (uid {}), who cannot read this agent's credentials",
              options.job_user->name, options.job_user->uid);
  if (options.insecure)
    log->warn("--insecure: {} is reachable from the network {}; anyone who can reach it can run jobs{}",
              bound, tls.enabled() ? "with TLS but no proof of its callers" : "without TLS",
              options.token.empty() ? "" : " if they have the token, which travels in clear text");
  std::cout << "listening on " << bound << std::endl;
  int sig = 0;
  // Reaps adopted orphans at each SIGCHLD, and every second in case signals merged.
  for (;;) {
    const timespec second{1, 0};
    sig = sigtimedwait(&sigs, nullptr, &second);
    if (sig == SIGTERM || sig == SIGINT) break;
    loadlab::agent::reap_strays();
  }
  log->info("signal {}: stopping; running jobs are cancelled and their processes stopped", sig);
  server.shutdown(1000);
  return 0;
}
