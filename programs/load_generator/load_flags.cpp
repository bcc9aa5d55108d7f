#include "load_flags.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "loadlab/shared/credential_files.hpp"
#include "loadlab/shared/flag_ranges.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::load {

namespace {

// What each request is: method, headers, body, timeout, connection reuse, protocol.
void add_request_flags(CLI::App& app, LoadFlags& flags) {
  using loadlab::number_in;
  namespace limits = loadlab::limits;
  app.add_option("-m,--method", flags.options.method, "request method (default GET)");
  app.add_option("-H,--header", flags.options.headers, "request header 'Name: value' (repeatable)");
  auto* body_opt = app.add_option("--body", flags.options.body, "request body");
  app.add_option("--body-file", flags.body_file,
                 "request body: the content of FILE (a body over 128 KiB cannot be one argument)")
      ->excludes(body_opt);
  app.add_option("--timeout", flags.options.timeout_ms, "per-request timeout in ms (default 5000)")
      ->check(number_in(1, limits::kMaxTimeoutMs));
  app.add_flag("--no-keepalive", flags.no_keepalive, "a new connection (and TLS handshake) per request");
  app.add_option("--protocol", flags.options.protocol,
                 "http1 (default); h2: HTTP/2, over TLS through ALPN with https://, with prior knowledge "
                 "(h2c) with http://; h3: HTTP/3 over QUIC (UDP, TLS 1.3), https:// only");
  flags.streams_opt = app.add_option("--streams", flags.streams,
                                     "--protocol h2 or h3: concurrent streams per connection (default 1)")
                          ->check(number_in(1, limits::kMaxStreams));
}

// TLS, and what the worker prints.
void add_tls_and_output_flags(CLI::App& app, LoadFlags& flags) {
  app.add_option("--tls-version", flags.options.tls_version,
                 "https://: the TLS version to force, 1.2 or 1.3 (default 1.3)");
  app.add_option("--ca", flags.options.ca_file,
                 "https://: verify the server against the PEM certificates in FILE");
  app.add_flag("--insecure", flags.options.insecure, "https://: no certificate or host name verification");
  app.add_flag("--tls-resume", flags.options.tls_resume,
               "https://: a reconnecting connection resumes its previous session");
  app.add_flag("--zero-rtt", flags.options.zero_rtt,
               "--protocol h3 with --tls-resume: a resumed connection sends its first requests as 0-RTT "
               "early data");
  app.add_option(
      "--csv-requests", flags.options.csv_requests,
      "write one row per measured request: protocol,tls_version,iteration,start_offset_us,total_us,"
      "connect_us,tls_us,first_byte_us,bytes,status,reused,resumed");
  app.add_flag("--json", flags.json, "print the final result as one JSON object");
  app.add_flag("--json-events", flags.json_events, "print JSON lines: progress, measure_start, result");
  app.add_option("--log-level", flags.options.log_level,
                 "trace|debug|info|warn|error|critical|off (default warn)");
}

}  // namespace

void add_load_flags(CLI::App& app, LoadFlags& flags) {
  app.add_option("url", flags.options.url, "http://HOST[:PORT][/PATH] or https://HOST[:PORT][/PATH]")
      ->required();
  // The integer flags' bounds are checked on the text too: a value their type cannot hold
  // ("-t 1e309") is refused with the range, not as text CLI11 could not convert.
  using loadlab::number_in;
  namespace limits = loadlab::limits;
  app.add_option("-t,--threads", flags.options.threads, "worker threads (default 1)")
      ->check(number_in(1, limits::kMaxThreads));
  app.add_option("-c,--connections", flags.options.connections,
                 "connections in total, spread over threads (default = threads)")
      ->check(number_in(1, limits::kMaxConnections));
  flags.requests_opt = app.add_option("-n,--requests", flags.requests, "measured requests per thread")
                           ->check(number_in(1, static_cast<double>(limits::kMaxRequests)));
  flags.total_opt = app.add_option("--total", flags.total, "measured requests overall, split over threads")
                        ->check(number_in(1, static_cast<double>(limits::kMaxRequests)));
  flags.duration_opt =
      app.add_option("-d,--duration", flags.duration, "measured seconds (default 10 if no -n/--total)");
  flags.rate_opt = app.add_option("--rate", flags.rate,
                                  "open loop: requests per second overall, each thread paces rate/threads; "
                                  "latency counts from intended send times");
  app.add_option("--arrivals", flags.options.arrivals,
                 "--rate: how the send times fall, uniform (an even pace, default) or poisson (exponential "
                 "gaps, drawn from --seed)");
  flags.seed_opt =
      app.add_option("--seed", flags.seed,
                     "--arrivals poisson: the draws' seed, 0..2^64-1 (default 1): the same seed, "
                     "the same send times");
  flags.pace_granularity_opt = app.add_option(
      "--pace-granularity", flags.pace_granularity,
      fmt::format("--rate: µs, 0..{:g} (default {:g}): each wake-up of a thread (its pacer or a response) "
                  "sends every slot due within this, early (its latency then counts from when it began): "
                  "fewer wake-ups and less CPU, less even sends",
                  loadlab::limits::kMaxPaceGranularityUs, loadlab::load::kDefaultPaceGranularityUs));
  app.add_option("--warmup", flags.options.warmup_s,
                 "warm-up seconds, excluded from every figure (default 0)");
  app.add_flag("--start-on-signal", flags.options.scheduled_start,
               "after warm-up, say so (a ready event with --json-events) and go on loading, unmeasured, "
               "until SIGUSR1: sent with sigqueue, its value is the CLOCK_MONOTONIC nanosecond the window "
               "opens at; sent with kill, it opens at once. The window then lasts -d");
  app.add_option("--pace-share", flags.pace_share,
                 "--rate over several workers: FIRST/TOTAL, this worker's threads are threads FIRST.. of "
                 "TOTAL at one rate a thread; uniform: their slots interleave with the other workers' from "
                 "the scheduled instant (--start-on-signal) into one even pace; poisson: thread g draws "
                 "stream g of --seed");
  add_request_flags(app, flags);
  add_tls_and_output_flags(app, flags);
}
LoadOptions load_options_from(const LoadFlags& flags) {
  LoadOptions o = flags.options;
  if (flags.requests_opt->count()) o.requests_per_thread = flags.requests;
  if (flags.total_opt->count()) o.total_requests = flags.total;
  if (flags.duration_opt->count()) o.duration_s = flags.duration;
  if (flags.rate_opt->count()) o.rate = flags.rate;
  if (flags.seed_opt->count()) o.seed = flags.seed;
  if (flags.pace_granularity_opt->count()) o.pace_granularity_us = flags.pace_granularity;
  if (!flags.pace_share.empty()) {
    unsigned first = 0, total = 0;
    char slash = 0, rest = 0;
    std::istringstream in(flags.pace_share);
    if (!(in >> first >> slash >> total) || slash != '/' || (in >> rest))
      throw InputError("--pace-share", "must be FIRST/TOTAL (e.g. 2/8), got '" + flags.pace_share + "'");
    o.pace_share = std::make_pair(static_cast<uint32_t>(first), static_cast<uint32_t>(total));
  }
  if (flags.streams_opt->count()) o.streams = flags.streams;
  o.keep_alive = !flags.no_keepalive;
  if (!flags.body_file.empty()) {
    auto body = read_small_file(flags.body_file, limits::kMaxBodyBytes);
    if (!body)
      throw InputError("--body-file", "cannot read \"" + flags.body_file + "\" (a regular file of at most " +
                                          std::to_string(limits::kMaxBodyBytes) + " bytes)");
    o.body = std::move(*body);
  }
  if (flags.json && flags.json_events) throw InputError("--json, --json-events", "give at most one");
  o.output = flags.json          ? OutputMode::kJson
             : flags.json_events ? OutputMode::kJsonEvents
                                 : OutputMode::kHuman;
  complete_and_validate(o);
  if (!o.csv_requests.empty()) {
    // Fail now rather than after a long run; the file is written once, at the end.
    std::FILE* f = std::fopen(o.csv_requests.c_str(), "w");
    if (!f)
      throw InputError("--csv-requests", "cannot write " + o.csv_requests + ": " + std::strerror(errno));
    std::fclose(f);
  }
  return o;
}

}  // namespace loadlab::load
