// loadlab-target: parses flags, runs the server until SIGINT/SIGTERM, prints `requests N`.
// Exit status: 0 clean stop, 1 cannot listen (or cannot make a certificate), 2 bad flags.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "knobs.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/credential_files.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/self_signed_cert.hpp"
#include "server.hpp"
#include "tls_context.hpp"

namespace {

namespace target = loadlab::target;

constexpr int kExitCannotListen = 1;
constexpr int kExitUsage = 2;
constexpr std::uint64_t kMaxTimeoutMs = loadlab::limits::kMaxTargetTimeoutMs;
constexpr std::uint64_t kMaxThreads = loadlab::limits::kMaxServerThreads;

int usage_error(const std::string& message) {
  std::cerr << "loadlab-target: " << message << "\n";
  return kExitUsage;
}

std::string got(const std::string& text) { return ", got '" + text + "'"; }

struct TlsFlags {
  bool tls = false;
  bool h3 = false;
  std::string cert;
  std::string key;
  std::string cert_out;
  bool any() const { return tls || h3 || !cert.empty() || !key.empty() || !cert_out.empty(); }
};

// Where the TLS set-up failed: the flag to name (a usage error, exit 2) or none (exit 1).
struct TlsSetupError {
  std::string flag;
  std::string message;
};

std::optional<std::string> read_pem(const std::string& path, std::string& error) {
  auto text = loadlab::read_credential_file(path);
  if (!text) {
    error = "cannot read '" + path + "': expected a readable regular file of at most " +
            std::to_string(loadlab::limits::kMaxCredentialFileBytes) + " bytes";
  }
  return text;
}

// The certificate and key of --tls-cert/--tls-key, or a new self-signed pair (whose
// certificate --tls-cert-out writes).
std::optional<target::TlsCredentials> tls_credentials(const TlsFlags& flags, TlsSetupError& error) {
  if (flags.cert.empty() != flags.key.empty()) {
    error = flags.cert.empty() ? TlsSetupError{"--tls-cert", "required with --tls-key"}
                               : TlsSetupError{"--tls-key", "required with --tls-cert"};
    return std::nullopt;
  }
  if (!flags.cert.empty()) {
    if (!flags.cert_out.empty()) {
      error = {"--tls-cert-out", "only for a generated certificate (--tls without --tls-cert and --tls-key)"};
      return std::nullopt;
    }
    auto cert = read_pem(flags.cert, error.message);
    if (!cert) return error.flag = "--tls-cert", std::nullopt;
    auto key = read_pem(flags.key, error.message);
    if (!key) return error.flag = "--tls-key", std::nullopt;
    return target::TlsCredentials{std::move(*cert), std::move(*key)};
  }
  auto generated = loadlab::make_self_signed_cert(std::chrono::system_clock::now(), error.message);
  if (!generated) return std::nullopt;
  loadlab::component_logger("target")->info(
      "tls: generated a self-signed certificate for localhost, 127.0.0.1 and ::1, valid 30 days, "
      "SHA-256 fingerprint {}",
      generated->sha256_fingerprint);
  if (!flags.cert_out.empty()) {
    std::ofstream out(flags.cert_out, std::ios::binary | std::ios::trunc);
    out << generated->credentials.cert_pem;
    out.close();
    if (!out) {
      error = {"--tls-cert-out", "cannot write '" + flags.cert_out + "'"};
      return std::nullopt;
    }
  }
  return std::move(generated->credentials);
}

struct TlsContexts {
  std::shared_ptr<boost::asio::ssl::context> tcp;
  std::shared_ptr<target::QuicTlsContext> quic;  // with --h3: GnuTLS, the same certificate
};

// False with `error` set when a context cannot be made.
bool tls_contexts(const TlsFlags& flags, TlsContexts& out, TlsSetupError& error) {
  auto credentials = tls_credentials(flags, error);
  if (!credentials) return false;
  auto result = target::make_tls_context(*credentials);
  if (!result.context) {
    const bool cert = result.bad == target::TlsContextResult::Bad::cert;
    const std::string& path = cert ? flags.cert : flags.key;
    error = {cert ? "--tls-cert" : "--tls-key", "'" + path + "': " + result.error};
    if (path.empty()) error.flag.clear();  // the generated pair: not the user's mistake
    return false;
  }
  out.tcp = std::move(result.context);
  if (!flags.h3) return true;
  out.quic = target::QuicTlsContext::make(*credentials, error.message);
  if (!out.quic) {
    error.flag = flags.cert.empty() ? "" : "--tls-cert";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loadlab built-in HTTP target: answers any request with a configurable status and body"};
  unsigned hw = std::thread::hardware_concurrency();
  // Every value is taken as text and validated below, so each error names the flag and range.
  std::string listen = "127.0.0.1:0";
  std::string threads_text = std::to_string(hw == 0 ? 1 : hw);
  std::string acceptor_text = "shared";
  std::string delay_text = "0";
  std::string work_text = "0";
  std::string body = "Have Fun ~ Tester !";
  std::string body_size_text;
  std::string status_text = "200";
  std::string stall_text;
  std::string read_timeout_text = "10000";
  std::string idle_timeout_text = "60000";
  std::string log_level = "warn";
  TlsFlags tls;
  app.set_version_flag("--version", loadlab::version_line("loadlab-target"));
  app.add_option("--listen", listen, "HOST:PORT to bind; port 0 lets the kernel pick")->capture_default_str();
  app.add_option("--threads", threads_text, "io threads, 1..1024 (default: cores)")->capture_default_str();
  app.add_option("--acceptor", acceptor_text,
                 "shared (one acceptor, round-robin) or reuseport (one SO_REUSEPORT acceptor per thread)")
      ->capture_default_str();
  app.add_option("--delay-ms", delay_text,
                 "delay before each response: D, uniform:A-B or exp:MEAN, in ms "
                 "(0..60000, fractions allowed); header x-loadlab-delay-ms overrides")
      ->capture_default_str();
  app.add_option("--work-us", work_text,
                 "CPU to burn per request in us, 0..1000000; header x-loadlab-work-us")
      ->capture_default_str();
  auto* body_opt = app.add_option("--body", body, "response body")->capture_default_str();
  app.add_option(
         "--body-size", body_size_text,
         "response body of N filler bytes, 0..67108864 (instead of --body); header x-loadlab-body-size")
      ->excludes(body_opt);
  app.add_option("--status", status_text, "response status, 200..599; header x-loadlab-status")
      ->capture_default_str();
  app.add_option("--stall", stall_text,
                 "AFTER_MS:DURATION_MS: once, AFTER_MS after the first request, hold every response "
                 "until DURATION_MS after the stall began");
  app.add_option("--read-timeout-ms", read_timeout_text,
                 "a request must arrive whole within this from its first byte, 1..3600000")
      ->capture_default_str();
  app.add_option("--idle-timeout-ms", idle_timeout_text,
                 "keep-alive connection idle between requests at most this, 1..3600000")
      ->capture_default_str();
  app.add_flag("--tls", tls.tls,
               "serve HTTPS (TLS 1.2 and 1.3; ALPN h2 or http/1.1); without --tls-cert/--tls-key a "
               "self-signed certificate for localhost, 127.0.0.1 and ::1 is made at start. Without "
               "--tls, HTTP/2 is h2c with prior knowledge");
  app.add_flag("--h3", tls.h3,
               "also serve HTTP/3 over QUIC on UDP at the same port (ALPN h3, TLS 1.3, 0-RTT); "
               "implies --tls, with the same certificate");
  std::string h3_retry = "auto";
  app.add_option("--h3-retry", h3_retry,
                 "--h3: when a new client must first prove its address by a Retry round trip: auto (once "
                 "more than 64 handshakes are in progress: a flood of Initials), always, or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--tls-cert", tls.cert, "PEM certificate chain, leaf first; with --tls-key; implies --tls");
  app.add_option("--tls-key", tls.key, "PEM private key (unencrypted) of --tls-cert; implies --tls");
  app.add_option("--tls-cert-out", tls.cert_out,
                 "write the generated certificate (PEM) here, for clients to trust; implies --tls");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }

  auto endpoint = loadlab::parse_endpoint(listen);
  if (!endpoint) {
    return usage_error("--listen: expected HOST:PORT (IPv6 as [ADDR]:PORT) with port 0..65535" + got(listen));
  }
  auto threads = target::parse_uint(threads_text, 1, kMaxThreads);
  if (!threads)
    return usage_error("--threads: " + target::expected_range(1, kMaxThreads) + got(threads_text));
  if (acceptor_text != "shared" && acceptor_text != "reuseport") {
    return usage_error("--acceptor: expected shared or reuseport" + got(acceptor_text));
  }
  auto delay = target::parse_delay(delay_text);
  if (!delay) return usage_error("--delay-ms: " + target::expected_delay() + got(delay_text));
  auto work = target::parse_uint(work_text, 0, target::kMaxWorkUs);
  if (!work)
    return usage_error("--work-us: " + target::expected_range(0, target::kMaxWorkUs) + got(work_text));
  if (!body_size_text.empty()) {
    auto size = target::parse_uint(body_size_text, 0, target::kMaxBodySize);
    if (!size) {
      return usage_error("--body-size: " + target::expected_range(0, target::kMaxBodySize) +
                         got(body_size_text));
    }
    body.assign(*size, 'x');
  }
  auto status = target::parse_uint(status_text, target::kMinStatus, target::kMaxStatus);
  if (!status) {
    return usage_error("--status: " + target::expected_range(target::kMinStatus, target::kMaxStatus) +
                       got(status_text));
  }
  std::optional<std::uint64_t> stall_after, stall_duration;
  if (!stall_text.empty()) {
    auto colon = stall_text.find(':');
    if (colon != std::string::npos) {
      stall_after = target::parse_uint(std::string_view(stall_text).substr(0, colon), 0, kMaxTimeoutMs);
      stall_duration = target::parse_uint(std::string_view(stall_text).substr(colon + 1), 1, kMaxTimeoutMs);
    }
    if (!stall_after || !stall_duration) {
      return usage_error(
          "--stall: expected AFTER_MS:DURATION_MS, integers, AFTER_MS 0..3600000 and "
          "DURATION_MS 1..3600000" +
          got(stall_text));
    }
  }
  auto read_timeout = target::parse_uint(read_timeout_text, 1, kMaxTimeoutMs);
  if (!read_timeout) {
    return usage_error("--read-timeout-ms: " + target::expected_range(1, kMaxTimeoutMs) +
                       got(read_timeout_text));
  }
  auto idle_timeout = target::parse_uint(idle_timeout_text, 1, kMaxTimeoutMs);
  if (!idle_timeout) {
    return usage_error("--idle-timeout-ms: " + target::expected_range(1, kMaxTimeoutMs) +
                       got(idle_timeout_text));
  }
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), log_level) == std::end(kLevels)) {
    return usage_error("--log-level: expected one of trace, debug, info, warn, error, critical, off" +
                       got(log_level));
  }
  loadlab::init_logging(log_level);
  TlsContexts tls_ctx;
  if (tls.any()) {
    TlsSetupError error;
    if (!tls_contexts(tls, tls_ctx, error)) {
      if (!error.flag.empty()) return usage_error(error.flag + ": " + error.message);
      std::cerr << "loadlab-target: cannot make a TLS certificate: " << error.message << "\n";
      return kExitCannotListen;
    }
  }

  target::ServerOptions options;
  options.listen = *endpoint;
  options.threads = static_cast<unsigned>(*threads);
  options.acceptor =
      acceptor_text == "reuseport" ? target::AcceptorMode::reuseport : target::AcceptorMode::shared;
  options.delay = *delay;
  options.work = std::chrono::microseconds(*work);
  options.body = body;
  options.status = static_cast<unsigned>(*status);
  if (stall_duration) {
    options.stall_after = std::chrono::milliseconds(*stall_after);
    options.stall_duration = std::chrono::milliseconds(*stall_duration);
  }
  options.read_timeout = std::chrono::milliseconds(*read_timeout);
  options.idle_timeout = std::chrono::milliseconds(*idle_timeout);
  options.tls = tls_ctx.tcp;
  options.h3 = tls_ctx.quic;
  options.h3_limits.retry = h3_retry == "always"  ? target::H3Retry::always
                            : h3_retry == "never" ? target::H3Retry::never
                                                  : target::H3Retry::auto_;
  target::Server server(options);
  if (auto ec = server.listen()) {
    std::cerr << "loadlab-target: cannot listen on " << endpoint->to_string() << ": " << ec.message() << "\n";
    return kExitCannotListen;
  }

  // Installed before announcing the port, so a stop sent right after the announcement is
  // handled; the handler only starts the shutdown, on the server's control thread.
  boost::asio::signal_set signals(server.control_executor(), SIGINT, SIGTERM);
  signals.async_wait([&server](const boost::system::error_code& ec, int) {
    if (!ec) server.initiate_shutdown();
  });
  std::signal(SIGPIPE, SIG_IGN);

  std::cout << "listening on " << server.local_endpoint().to_string() << std::endl;
  if (options.h3) std::cout << "http/3 on udp " << server.local_endpoint().to_string() << std::endl;
  server.run();
  std::cout << "requests " << server.requests() << std::endl;
  return 0;
}
