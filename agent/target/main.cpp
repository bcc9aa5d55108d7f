// loadlab-target: parses flags, runs the server until SIGINT/SIGTERM, prints `requests N`.
// Exit status (loadlab/shared/program.hpp): 0 clean stop, 1 cannot listen (or cannot make a
// certificate), 2 bad flags.
#include <CLI/CLI.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <iostream>

#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/program.hpp"
#include "server.hpp"
#include "target_flags.hpp"

namespace {

// Listens, announces the port, serves until a signal, then says how many requests it answered.
int serve(const loadlab::target::ServerOptions& options) {
  loadlab::target::Server server(options);
  if (auto ec = server.listen()) {
    std::cerr << "loadlab-target: cannot listen on " << options.listen.to_string() << ": " << ec.message()
              << "\n";
    return loadlab::program::kFailed;
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
  return loadlab::program::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  return loadlab::program::run("loadlab-target", [&] {
    CLI::App app{"loadlab built-in HTTP target: answers any request with a configurable status and body"};
    app.set_version_flag("--version", loadlab::version_line("loadlab-target"));
    loadlab::target::TargetFlags flags;
    loadlab::target::add_target_flags(app, flags);
    if (auto done = loadlab::program::parse_command_line(app, argc, argv, "loadlab-target")) return *done;
    return serve(loadlab::target::target_options(flags));
  });
}
