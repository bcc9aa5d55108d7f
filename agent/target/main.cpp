// loadlab-target: parses flags, runs the server until SIGINT/SIGTERM, prints `requests N`.
// Exit status: 0 clean stop, 1 cannot listen, 2 bad flags.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/logging.hpp"
#include "server.hpp"

namespace {

constexpr int kExitCannotListen = 1;
constexpr int kExitUsage = 2;

int usage_error(const std::string& message) {
  std::cerr << "loadlab-target: " << message << "\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loadlab built-in HTTP target: answers 200 with a fixed body to any request"};
  std::string listen = "127.0.0.1:0";
  unsigned hw = std::thread::hardware_concurrency();
  long long threads = hw == 0 ? 1 : hw;
  long long delay_ms = 0;
  std::string body = "Have Fun ~ Tester !";
  std::string log_level = "warn";
  // Numbers are parsed as text and validated below, so every error names the flag and range.
  std::string threads_text = std::to_string(threads);
  std::string delay_text = "0";
  app.add_option("--listen", listen, "HOST:PORT to bind; port 0 lets the kernel pick")->capture_default_str();
  app.add_option("--threads", threads_text, "io threads, 1..1024")->capture_default_str();
  app.add_option("--delay-ms", delay_text, "delay before each response in ms, 0..60000")
      ->capture_default_str();
  app.add_option("--body", body, "response body")->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }

  auto parse_int = [](const std::string& text, long long min, long long max, long long& out) {
    std::size_t used = 0;
    try {
      out = std::stoll(text, &used);
    } catch (const std::exception&) {
      return false;
    }
    return used == text.size() && out >= min && out <= max;
  };
  auto endpoint = loadlab::parse_endpoint(listen);
  if (!endpoint) {
    return usage_error("--listen: expected HOST:PORT (IPv6 as [ADDR]:PORT) with port 0..65535, got '" +
                       listen + "'");
  }
  if (!parse_int(threads_text, 1, 1024, threads)) {
    return usage_error("--threads: expected an integer in 1..1024, got '" + threads_text + "'");
  }
  if (!parse_int(delay_text, 0, 60000, delay_ms)) {
    return usage_error("--delay-ms: expected an integer in 0..60000, got '" + delay_text + "'");
  }
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), log_level) == std::end(kLevels)) {
    return usage_error("--log-level: expected one of trace, debug, info, warn, error, critical, off, got '" +
                       log_level + "'");
  }
  loadlab::init_logging(log_level);

  loadlab::target::ServerOptions options;
  options.listen = *endpoint;
  options.threads = static_cast<unsigned>(threads);
  options.delay = std::chrono::milliseconds(delay_ms);
  options.body = body;
  loadlab::target::Server server(options);
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
  server.run();
  std::cout << "requests " << server.requests() << std::endl;
  return 0;
}
