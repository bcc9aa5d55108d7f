// The target's programs (loadlab-target, loadlab-target-secure, loadlab-target-h3): parse flags,
// run the server until SIGINT/SIGTERM, print `requests N`. Exit status (loadlab/shared/program.hpp):
// 0 clean stop, 1 cannot listen (or cannot make a certificate, or no sibling program to hand TLS
// or HTTP/3 to), 2 bad flags.
#include <CLI/CLI.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <iostream>

#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/program.hpp"
#include "server.hpp"
#include "target_flags.hpp"

namespace loadlab::target {

namespace {

// Listens, announces the port, serves until a signal, then says how many requests it answered.
int serve(const ServerOptions& options) {
  Server server(options);
  if (auto ec = server.listen()) {
    std::cerr << "loadlab-target: cannot listen on " << options.listen.to_string() << ": " << ec.message()
              << "\n";
    return program::kFailed;
  }
  // Installed before announcing the port, so a stop sent right after the announcement is
  // handled; the handler only starts the shutdown, on the server's control thread.
  boost::asio::signal_set signals(server.control_executor(), SIGINT, SIGTERM);
  signals.async_wait([&server](const boost::system::error_code& ec, int) {
    if (!ec) server.initiate_shutdown();
  });
  std::signal(SIGPIPE, SIG_IGN);
  std::cout << "listening on " << server.local_endpoint().to_string() << std::endl;
  if (options.secure && options.secure->serves_h3())
    std::cout << "http/3 on udp " << server.local_endpoint().to_string() << std::endl;
  server.run();
  std::cout << "requests " << server.requests() << std::endl;
  return program::kOk;
}

}  // namespace

int target_main(int argc, char** argv, const TargetProgram& self) {
  return program::run("loadlab-target", [&] {
    CLI::App app{"loadlab built-in HTTP target: answers any request with a configurable status and body"};
    app.set_version_flag("--version", version_line(self.name));
    TargetFlags flags;
    add_target_flags(app, flags);
    if (auto done = program::parse_command_line(app, argc, argv, "loadlab-target")) return *done;
    // TLS and HTTP/3 live in programs of their own, beside this binary: once the plain flags are
    // checked, this process becomes the one the command line needs.
    const char* needed = flags.h3 ? "loadlab-target-h3" : flags.any_tls() ? "loadlab-target-secure" : nullptr;
    if (needed && std::string_view(needed) != self.name) {
      (void)target_options(flags, nullptr);
      program::hand_over_to_sibling(argv, needed, flags.h3 ? "--h3" : "--tls, --tls-cert and --tls-key");
    }
    return serve(target_options(flags, self.add_secure));
  });
}

}  // namespace loadlab::target
