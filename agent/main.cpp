// loadlab-agent: the daemon on each lab machine. Parses flags, serves, stops on a signal.
// Exit status (loadlab/shared/program.hpp): 0 stopped by a signal, 1 cannot serve, 2 bad flags.
#include <signal.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "agent_flags.hpp"
#include "loadlab/agent/job_processes.hpp"
#include "loadlab/agent/pids_limit.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/program.hpp"

namespace {

// No process of the agent's user (a job run as that user) may read the agent's memory, where
// its TLS key is, through /proc/PID/mem or ptrace: the agent is not dumpable (the only guard
// where the kernel has no Yama). Orphans of the jobs' processes come to the agent (a child
// subreaper; as PID 1 in a container they come anyway): it reaps them in serve() and kills them
// with their job (job_processes.hpp). How jobs are held is chosen (and logged) now, not at the
// first job.
void prepare_process() {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    loadlab::component_logger("agent")->warn("cannot make the agent undumpable: {}", std::strerror(errno));
  if (!loadlab::agent::become_subreaper())
    loadlab::component_logger("agent")->warn("cannot become a child subreaper: {}", std::strerror(errno));
  loadlab::agent::proc_control();
  loadlab::agent::pids_limit_place();
}

// Serves until SIGTERM or SIGINT, reaping adopted orphans meanwhile.
int serve(const loadlab::agent::AgentOptions& options, const loadlab::agent::AgentFlags& flags) {
  // Signals are taken by this thread with sigtimedwait: no work in a signal handler. SIGCHLD: an
  // adopted orphan exited (own children are waited for by their owners).
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int s : {SIGTERM, SIGINT, SIGCHLD}) sigaddset(&sigs, s);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  auto log = loadlab::component_logger("agent");
  loadlab::agent::AgentServer server(options);
  const std::string bound = server.start(flags.listen, flags.tls);
  const auto& tls = flags.tls;
  log->info("agent {} serving on {} ({}{}); load may go to {}", options.name, bound,
            tls.enabled() ? (tls.client_ca.empty() ? "TLS" : "mutual TLS") : "no TLS",
            options.token_digest.empty() ? "" : ", token required", options.allow_load_to.to_string());
  if (options.job_user)
    log->info("jobs run as user {} (uid {}), who cannot read this agent's credentials",
              options.job_user->name, options.job_user->uid);
  if (options.insecure)
    log->warn("--insecure: {} is reachable from the network {}; anyone who can reach it can run jobs{}",
              bound, tls.enabled() ? "with TLS but no proof of its callers" : "without TLS",
              options.token_digest.empty() ? "" : " if they have the token, which travels in clear text");
  // The metrics endpoint (docs/agent.md, "Metrics"): its scrapes read the service's state.
  auto& service = server.service();
  loadlab::metrics::Server metrics(
      [&service] { return service.metrics(); },
      [&service](std::string_view authorization) { return service.authorizes(authorization); },
      [&service] { service.count_metrics_refusal(); });
  std::cout << "listening on " << bound << std::endl;
  if (!flags.metrics_listen.empty()) {
    const auto at =
        metrics.start(flags.metrics_listen, loadlab::agent::metrics_tls(flags), "--metrics-listen");
    log->info("metrics on {}://{}/metrics", tls.enabled() ? "https" : "http", at);
    std::cout << "metrics on " << at << std::endl;
  }
  int sig = 0;
  for (;;) {  // reaps at each SIGCHLD, and every second in case signals merged
    const timespec second{1, 0};
    sig = sigtimedwait(&sigs, nullptr, &second);
    if (sig == SIGTERM || sig == SIGINT) break;
    loadlab::agent::reap_strays();
  }
  log->info("signal {}: stopping; running jobs are cancelled and their processes stopped", sig);
  metrics.stop();
  server.shutdown(1000);
  return loadlab::program::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  return loadlab::program::run("loadlab-agent", [&] {
    CLI::App app{"loadlab-agent: hosts targets and runs load workers for the loadlab controller"};
    app.set_version_flag("--version", loadlab::version_line("loadlab-agent"));
    loadlab::agent::AgentFlags flags;
    loadlab::agent::add_agent_flags(app, flags);
    if (auto done = loadlab::program::parse_command_line(app, argc, argv, "loadlab-agent")) return *done;
    if (!loadlab::init_logging(flags.log_level))
      throw loadlab::InputError("--log-level", "must be one of trace, debug, info, warn, error, off");
    prepare_process();
    return serve(loadlab::agent::agent_options(flags), flags);
  });
}
