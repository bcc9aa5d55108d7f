#include "target_flags.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "knobs.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::target {

namespace {

constexpr std::uint64_t kMaxTimeoutMs = limits::kMaxTargetTimeoutMs;
constexpr std::uint64_t kMaxThreads = limits::kMaxServerThreads;

std::string got(const std::string& text) { return ", got '" + text + "'"; }

// An integer flag within [min, max], or InputError naming it.
std::uint64_t uint_flag(const char* flag, const std::string& text, std::uint64_t min, std::uint64_t max) {
  auto value = parse_uint(text, min, max);
  if (!value) throw InputError(flag, expected_range(min, max) + got(text));
  return *value;
}

}  // namespace

void add_target_flags(CLI::App& app, TargetFlags& flags) {
  const unsigned cores = std::thread::hardware_concurrency();
  flags.threads = std::to_string(cores == 0 ? 1 : cores);
  app.add_option("--listen", flags.listen, "HOST:PORT to bind; port 0 lets the kernel pick")
      ->capture_default_str();
  app.add_option("--threads", flags.threads, "io threads, 1..1024 (default: cores)")->capture_default_str();
  app.add_option("--acceptor", flags.acceptor,
                 "shared (one acceptor, round-robin) or reuseport (one SO_REUSEPORT acceptor per thread)")
      ->capture_default_str();
  app.add_option("--delay-ms", flags.delay,
                 "delay before each response: D, uniform:A-B or exp:MEAN, in ms "
                 "(0..60000, fractions allowed); header x-loadlab-delay-ms overrides")
      ->capture_default_str();
  app.add_option("--work-us", flags.work,
                 "CPU to burn per request in us, 0..1000000, fractions allowed; header x-loadlab-work-us")
      ->capture_default_str();
  auto* body_opt = app.add_option("--body", flags.body, "response body")->capture_default_str();
  app.add_option(
         "--body-size", flags.body_size,
         "response body of N filler bytes, 0..67108864 (instead of --body); header x-loadlab-body-size")
      ->excludes(body_opt);
  app.add_option("--status", flags.status, "response status, 200..599; header x-loadlab-status")
      ->capture_default_str();
  app.add_option("--stall", flags.stall,
                 "AFTER_MS:DURATION_MS: once, AFTER_MS after the first request, hold every response "
                 "until DURATION_MS after the stall began");
  app.add_option("--read-timeout-ms", flags.read_timeout,
                 "a request must arrive whole within this from its first byte, 1..3600000")
      ->capture_default_str();
  app.add_option("--idle-timeout-ms", flags.idle_timeout,
                 "keep-alive connection idle between requests at most this, 1..3600000")
      ->capture_default_str();
  app.add_flag("--tls", flags.tls,
               "serve HTTPS (TLS 1.2 and 1.3; ALPN h2 or http/1.1); without --tls-cert/--tls-key a "
               "self-signed certificate for localhost, 127.0.0.1 and ::1 is made at start. Without "
               "--tls, HTTP/2 is h2c with prior knowledge");
  app.add_flag("--h3", flags.h3,
               "also serve HTTP/3 over QUIC on UDP at the same port (ALPN h3, TLS 1.3, 0-RTT); "
               "implies --tls, with the same certificate");
  app.add_option("--h3-retry", flags.h3_retry,
                 "--h3: when a new client must first prove its address by a Retry round trip: auto (once "
                 "more than 64 handshakes are in progress: a flood of Initials), always, or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--tls-cert", flags.tls_cert,
                 "PEM certificate chain, leaf first; with --tls-key; implies --tls");
  app.add_option("--tls-key", flags.tls_key, "PEM private key (unencrypted) of --tls-cert; implies --tls");
  app.add_option("--tls-cert-out", flags.tls_cert_out,
                 "write the generated certificate (PEM) here, for clients to trust; implies --tls");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
}

ServerOptions target_options(const TargetFlags& flags, AddSecure add_secure) {
  ServerOptions options;
  const auto endpoint = parse_endpoint(flags.listen);
  if (!endpoint)
    throw InputError("--listen",
                     "expected HOST:PORT (IPv6 as [ADDR]:PORT) with port 0..65535" + got(flags.listen));
  options.listen = *endpoint;
  options.threads = static_cast<unsigned>(uint_flag("--threads", flags.threads, 1, kMaxThreads));
  if (flags.acceptor != "shared" && flags.acceptor != "reuseport")
    throw InputError("--acceptor", "expected shared or reuseport" + got(flags.acceptor));
  options.acceptor = flags.acceptor == "reuseport" ? AcceptorMode::reuseport : AcceptorMode::shared;
  const auto delay = parse_delay(flags.delay);
  if (!delay) throw InputError("--delay-ms", expected_delay() + got(flags.delay));
  options.delay = *delay;
  const auto work = parse_work_us(flags.work, kMaxWorkUs);
  if (!work) throw InputError("--work-us", expected_work_us(kMaxWorkUs) + got(flags.work));
  options.work = *work;
  options.body = flags.body;
  if (!flags.body_size.empty())
    options.body.assign(uint_flag("--body-size", flags.body_size, 0, kMaxBodySize), 'x');
  options.status = static_cast<unsigned>(uint_flag("--status", flags.status, kMinStatus, kMaxStatus));
  if (!flags.stall.empty()) {
    const auto colon = flags.stall.find(':');
    std::optional<std::uint64_t> after, duration;
    if (colon != std::string::npos) {
      after = parse_uint(std::string_view(flags.stall).substr(0, colon), 0, kMaxTimeoutMs);
      duration = parse_uint(std::string_view(flags.stall).substr(colon + 1), 1, kMaxTimeoutMs);
    }
    if (!after || !duration)
      throw InputError("--stall", "expected AFTER_MS:DURATION_MS, integers, AFTER_MS 0.." +
                                      std::to_string(kMaxTimeoutMs) + " and DURATION_MS 1.." +
                                      std::to_string(kMaxTimeoutMs) + got(flags.stall));
    options.stall_after = std::chrono::milliseconds(*after);
    options.stall_duration = std::chrono::milliseconds(*duration);
  }
  options.read_timeout =
      std::chrono::milliseconds(uint_flag("--read-timeout-ms", flags.read_timeout, 1, kMaxTimeoutMs));
  options.idle_timeout =
      std::chrono::milliseconds(uint_flag("--idle-timeout-ms", flags.idle_timeout, 1, kMaxTimeoutMs));
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), flags.log_level) == std::end(kLevels))
    throw InputError("--log-level",
                     "expected one of trace, debug, info, warn, error, critical, off" + got(flags.log_level));
  options.h3_limits.retry = flags.h3_retry == "always"  ? H3Retry::always
                            : flags.h3_retry == "never" ? H3Retry::never
                                                        : H3Retry::auto_;
  init_logging(flags.log_level);  // before the certificate is made: it logs its fingerprint
  if (flags.any_tls() && add_secure) add_secure(flags, options);
  return options;
}

}  // namespace loadlab::target
