// loadlab-load: closed- or open-loop HTTP/1.1 or HTTP/2 load generator, over TCP or TLS. Parses flags, wires
// the runner to the chosen output, maps outcomes to exit codes: 0 done (request errors included), 1 target
// unreachable, 2 bad flags.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "load_options.hpp"
#include "load_runner.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/credential_files.hpp"
#include "loadlab/shared/flag_ranges.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "progress_line.hpp"

namespace {

std::atomic<loadlab::load::LoadRunner*> g_runner{nullptr};
std::atomic<bool> g_signalled{false};  // a signal came before the runner existed

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

}  // namespace

int main(int argc, char** argv) {
  using loadlab::load::OutputMode;
  // First: a SIGINT/SIGTERM during start-up still ends the run with its (empty) result.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  loadlab::load::LoadOptions o;
  CLI::App app{
      "loadlab-load: HTTP/1.1 or HTTP/2 (http:// or https://) load generator, closed loop (like wrk) or open "
      "loop with "
      "--rate "
      "(like wrk2)",
      "loadlab-load"};
  int64_t requests = 0, total = 0;
  double duration = 0, rate = 0;
  bool no_keepalive = false, json = false, json_events = false;
  app.set_version_flag("--version", loadlab::version_line("loadlab-load"));
  app.add_option("url", o.url, "http://HOST[:PORT][/PATH] or https://HOST[:PORT][/PATH]")->required();
  // The integer flags' bounds are checked on the text too: a value their type cannot hold
  // ("-t 1e309") is refused with the range, not as text CLI11 could not convert.
  using loadlab::number_in;
  namespace limits = loadlab::limits;
  app.add_option("-t,--threads", o.threads, "worker threads (default 1)")
      ->check(number_in(1, limits::kMaxThreads));
  app.add_option("-c,--connections", o.connections,
                 "connections in total, spread over threads (default = threads)")
      ->check(number_in(1, limits::kMaxConnections));
  auto* n_opt = app.add_option("-n,--requests", requests, "measured requests per thread")
                    ->check(number_in(1, static_cast<double>(limits::kMaxRequests)));
  auto* total_opt = app.add_option("--total", total, "measured requests overall, split over threads")
                        ->check(number_in(1, static_cast<double>(limits::kMaxRequests)));
  auto* d_opt = app.add_option("-d,--duration", duration, "measured seconds (default 10 if no -n/--total)");
  auto* rate_opt = app.add_option("--rate", rate,
                                  "open loop: requests per second overall, each thread paces rate/threads; "
                                  "latency counts from intended send times");
  app.add_option("--warmup", o.warmup_s, "warm-up seconds, excluded from every figure (default 0)");
  app.add_option("-m,--method", o.method, "request method (default GET)");
  app.add_option("-H,--header", o.headers, "request header 'Name: value' (repeatable)");
  auto* body_opt = app.add_option("--body", o.body, "request body");
  std::string body_file;
  app.add_option("--body-file", body_file,
                 "request body: the content of FILE (a body over 128 KiB cannot be one argument)")
      ->excludes(body_opt);
  app.add_option("--timeout", o.timeout_ms, "per-request timeout in ms (default 5000)")
      ->check(number_in(1, limits::kMaxTimeoutMs));
  app.add_flag("--no-keepalive", no_keepalive, "a new connection (and TLS handshake) per request");
  app.add_option("--protocol", o.protocol,
                 "http1 (default); h2: HTTP/2, over TLS through ALPN with https://, with prior knowledge "
                 "(h2c) with http://; h3: HTTP/3 over QUIC (UDP, TLS 1.3), https:// only");
  int streams = 0;
  auto* streams_opt = app.add_option("--streams", streams,
                                     "--protocol h2 or h3: concurrent streams per connection (default 1)")
                          ->check(number_in(1, limits::kMaxStreams));
  app.add_option("--tls-version", o.tls_version,
                 "https://: the TLS version to force, 1.2 or 1.3 (default 1.3)");
  app.add_option("--ca", o.ca_file, "https://: verify the server against the PEM certificates in FILE");
  app.add_flag("--insecure", o.insecure, "https://: no certificate or host name verification");
  app.add_flag("--tls-resume", o.tls_resume,
               "https://: a reconnecting connection resumes its previous session");
  app.add_flag("--zero-rtt", o.zero_rtt,
               "--protocol h3 with --tls-resume: a resumed connection sends its first requests as 0-RTT "
               "early data");
  app.add_option(
      "--csv-requests", o.csv_requests,
      "write one row per measured request: protocol,tls_version,iteration,start_offset_us,total_us,"
      "connect_us,tls_us,first_byte_us,bytes,status,reused,resumed");
  app.add_flag("--json", json, "print the final result as one JSON object");
  app.add_flag("--json-events", json_events, "print JSON lines: progress, measure_start, result");
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error|critical|off (default warn)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "loadlab-load: %s (see --help)\n", e.what());
    return 2;
  }
  if (n_opt->count()) o.requests_per_thread = requests;
  if (total_opt->count()) o.total_requests = total;
  if (d_opt->count()) o.duration_s = duration;
  if (rate_opt->count()) o.rate = rate;
  if (streams_opt->count()) o.streams = streams;
  o.keep_alive = !no_keepalive;
  if (!body_file.empty()) {
    auto body = loadlab::read_small_file(body_file, loadlab::limits::kMaxBodyBytes);
    if (!body) {
      std::fprintf(stderr,
                   "loadlab-load: --body-file: cannot read \"%s\" (a regular file of at most %lld bytes)\n",
                   body_file.c_str(), static_cast<long long>(loadlab::limits::kMaxBodyBytes));
      return 2;
    }
    o.body = std::move(*body);
  }
  if (json && json_events) {
    std::fprintf(stderr, "loadlab-load: --json, --json-events: give at most one\n");
    return 2;
  }
  o.output = json ? OutputMode::kJson : json_events ? OutputMode::kJsonEvents : OutputMode::kHuman;
  try {
    loadlab::load::validate(o);
  } catch (const loadlab::InputError& e) {
    std::fprintf(stderr, "loadlab-load: %s\n", e.what());
    return 2;
  }
  if (!o.csv_requests.empty()) {
    // Fail now rather than after a long run; the file is written once, at the end.
    std::FILE* f = std::fopen(o.csv_requests.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "loadlab-load: --csv-requests: cannot write %s: %s\n", o.csv_requests.c_str(),
                   std::strerror(errno));
      return 2;
    }
    std::fclose(f);
  }
  loadlab::init_logging(o.log_level);

  loadlab::load::RunCallbacks callbacks;
  const bool events = o.output == OutputMode::kJsonEvents;
  const bool tty = isatty(STDERR_FILENO) == 1;
  bool progress_shown = false;
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
        print_line(ev);
      }
      if (tty) {
        std::fputs(loadlab::load::format_progress_line(p).c_str(), stderr);
        progress_shown = true;
      }
    };
  }
  if (events)
    callbacks.on_measure_start = [] {
      loadlab::v1::LoadEvent ev;
      ev.mutable_measure_start();
      print_line(ev);
    };
  loadlab::load::LoadRunner runner(o, std::move(callbacks));
  g_runner.store(&runner);
  if (g_signalled.load()) runner.initiate_shutdown();
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
  return result.error.empty() && result.csv_error.empty() ? 0 : 1;
}
