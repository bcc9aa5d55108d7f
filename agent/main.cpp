// loadlab-agent: the daemon on each lab machine. Parses flags, serves, stops on a signal.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"

int main(int argc, char** argv) {
  loadlab::agent::AgentOptions options;
  std::string listen = "127.0.0.1:7700";
  std::string log_level = "info";
  CLI::App app{"loadlab-agent: hosts targets and runs load workers for the loadlab controller"};
  app.add_option("--listen", listen, "HOST:PORT to serve gRPC on (port 0: any free port)");
  app.add_option("--name", options.name, "agent name shown to the controller");
  app.add_option("--bin-dir", options.bin_dir, "folder holding loadlab-target and loadlab-load")
      ->check(CLI::ExistingDirectory);
  app.add_option("--advertise", options.target_host, "address targets bind and hand to load agents");
  app.add_option("--sample-interval-ms", options.sample_interval_ms, "RSS sampling period")
      ->check(CLI::Range(10, 10000));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  std::string catalog_file;
  app.add_option("--catalog", catalog_file, "JSON file naming the external targets this agent may run");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!loadlab::init_logging(log_level)) {
    std::cerr << "--log-level: must be one of trace, debug, info, warn, error, off\n";
    return 2;
  }
  loadlab::agent::proc_control();  // chosen (and logged) now, not at the first job
  if (!loadlab::parse_endpoint(listen) && listen.rfind("unix:", 0) != 0) {
    std::cerr << "--listen: must be HOST:PORT or unix:PATH, got \"" << listen << "\"\n";
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
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto log = loadlab::component_logger("agent");
  loadlab::agent::AgentServer server(options);
  std::string bound;
  try {
    bound = server.start(listen);
  } catch (const std::exception& e) {
    std::cerr << "loadlab-agent: " << e.what() << "\n";
    return 1;
  }
  log->info("agent {} serving on {}", options.name, bound);
  std::cout << "listening on " << bound << std::endl;
  int sig = 0;
  sigwait(&sigs, &sig);
  log->info("signal {}: stopping; running jobs are cancelled and their processes stopped", sig);
  server.shutdown(1000);
  return 0;
}
