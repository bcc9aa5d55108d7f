// The load generator's programs (loadlab-load, loadlab-load-secure, loadlab-load-h3): closed- or
// open-loop HTTP/1.1, HTTP/2 or HTTP/3. Parses flags, wires the runner to the chosen output, maps
// outcomes to exit statuses (loadlab/shared/program.hpp): 0 done (request errors included), 1
// target unreachable (or no sibling program to hand TLS or HTTP/3 to), 2 bad flags.
#include "load_main.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "load_flags.hpp"
#include "load_runner.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/program.hpp"
#include "progress_line.hpp"

namespace {

std::atomic<loadlab::load::LoadRunner*> g_runner{nullptr};
std::atomic<bool> g_signalled{false};  // a signal came before the runner existed

// --start-on-signal: the instant the window opens, named before the runner existed (0: none).
std::atomic<std::chrono::steady_clock::rep> g_start_at{0};

// SIGUSR1: from sigqueue, its value is the CLOCK_MONOTONIC nanosecond the window opens at
// (steady_clock's, on Linux); from kill, now.
extern "C" void on_start_signal(int, siginfo_t* info, void*) {
  static_assert(sizeof(void*) == sizeof(int64_t), "a sigval carries a 64-bit instant");
  const auto at = info->si_code == SI_QUEUE ? std::chrono::steady_clock::time_point(std::chrono::nanoseconds(
                                                  reinterpret_cast<intptr_t>(info->si_value.sival_ptr)))
                                            : std::chrono::steady_clock::now();  // clock_gettime: signal-safe
  if (auto* runner = g_runner.load())
    runner->start_at(at);
  else
    g_start_at.store(at.time_since_epoch().count());
}

extern "C" void on_signal(int sig) {
  g_signalled.store(true);
  if (auto* runner = g_runner.load()) runner->initiate_shutdown();
  std::signal(sig, SIG_DFL);  // a second signal ends the process at once
}

// One protocol message as a JSON line on stdout (see LoadEvent in agent.proto).
void print_line(const google::protobuf::Message& m) {
  std::string line = loadlab::proto::to_json(m);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

// The callbacks for the output mode: progress and measure_start events (--json-events), a
// progress line on a terminal.
loadlab::load::RunCallbacks callbacks_for(loadlab::load::OutputMode output, bool& progress_shown) {
  using loadlab::load::OutputMode;
  loadlab::load::RunCallbacks callbacks;
  const bool events = output == OutputMode::kJsonEvents;
  const bool tty = isatty(STDERR_FILENO) == 1;
  if (events || tty) {
    callbacks.on_progress = [events, tty, &progress_shown](const loadlab::load::Progress& p) {
      if (events) {
        loadlab::v1::LoadEvent ev;
        auto* pp = ev.mutable_progress();
        pp->set_elapsed_s(p.elapsed_s);
        pp->set_requests(static_cast<uint64_t>(p.requests));
        pp->set_errors(static_cast<uint64_t>(p.errors));
        pp->set_qps(p.qps);
        pp->set_warmup(p.warmup);
        pp->set_latency_mean_ms(p.latency_mean_ms);
        print_line(ev);
      }
      if (tty) {
        std::fputs(loadlab::load::format_progress_line(p).c_str(), stderr);
        progress_shown = true;
      }
    };
  }
  if (events)
    callbacks.on_ready = [] {
      loadlab::v1::LoadEvent ev;
      ev.mutable_ready()->set_agent_ns(
          std::chrono::nanoseconds(std::chrono::steady_clock::now().time_since_epoch()).count());
      print_line(ev);
    };
  if (events)
    callbacks.on_measure_start = [] {
      loadlab::v1::LoadEvent ev;
      ev.mutable_measure_start();
      print_line(ev);
    };
  return callbacks;
}

// Runs the load (a signal ends it early, with its result) and prints the result in its mode.
int run_load(const loadlab::load::LoadOptions& o, loadlab::load::MakeSecureClients make_secure) {
  using loadlab::load::OutputMode;
  bool progress_shown = false;
  loadlab::load::LoadRunner runner(o, callbacks_for(o.output, progress_shown), make_secure);
  g_runner.store(&runner);
  if (g_signalled.load()) runner.initiate_shutdown();
  if (auto at = g_start_at.load())
    runner.start_at(std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(at)));
  loadlab::load::LoadResult result = runner.run();
  g_runner.store(nullptr);
  if (progress_shown) std::fputs("\r\x1b[K", stderr);  // the summary replaces the progress line
  if (!result.error.empty()) std::fprintf(stderr, "loadlab-load: %s\n", result.error.c_str());
  // The human summary says it itself; JSON output keeps stdout for the message.
  if (!result.tls_error.empty() && o.output != OutputMode::kHuman)
    std::fprintf(stderr, "loadlab-load: TLS handshake failed: %s\n", result.tls_error.c_str());
  if (auto held = loadlab::load::rate_not_held_message(result);
      !held.empty() && o.output != OutputMode::kHuman)
    std::fprintf(stderr, "loadlab-load: %s\n", held.c_str());
  if (o.output == OutputMode::kJson) {
    print_line(loadlab::load::to_proto(result));
  } else if (o.output == OutputMode::kJsonEvents) {
    loadlab::v1::LoadEvent ev;
    *ev.mutable_result() = loadlab::load::to_proto(result);
    print_line(ev);
  } else if (result.error.empty()) {
    std::fputs(loadlab::load::format_summary(result, o).c_str(), stdout);
  }
  if (!result.csv_error.empty()) std::fprintf(stderr, "loadlab-load: %s\n", result.csv_error.c_str());
  return result.error.empty() && result.csv_error.empty() ? loadlab::program::kOk : loadlab::program::kFailed;
}

}  // namespace

namespace loadlab::load {

int load_main(int argc, char** argv, const LoadProgram& program) {
  // First: a SIGINT/SIGTERM during start-up still ends the run with its (empty) result.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  struct sigaction start {};
  start.sa_sigaction = on_start_signal;
  start.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&start.sa_mask);
  sigaction(SIGUSR1, &start, nullptr);
  const char* name = program.name;
  return program::run(name, [&] {
    CLI::App app{
        "loadlab-load: HTTP/1.1, HTTP/2 or HTTP/3 (http:// or https://) load generator, closed loop (like "
        "wrk) "
        "or open loop with --rate (like wrk2)",
        "loadlab-load"};
    app.set_version_flag("--version", version_line(name));
    LoadFlags flags;
    add_load_flags(app, flags);
    if (auto done = program::parse_command_line(app, argc, argv, name)) return *done;
    const auto options = load_options_from(flags);
    // TLS and HTTP/3 live in programs of their own, beside this binary: this process becomes the
    // one the command line needs.
    const bool h3 = uses_h3(options), tls = parse_url(options.url).tls;
    const char* needed = h3 ? "loadlab-load-h3" : tls ? "loadlab-load-secure" : nullptr;
    if (needed && std::string_view(needed) != name)
      program::hand_over_to_sibling(argv, needed, h3 ? "--protocol h3 runs" : "https:// URLs");
    init_logging(options.log_level);
    return run_load(options, program.make_secure);
  });
}

}  // namespace loadlab::load
