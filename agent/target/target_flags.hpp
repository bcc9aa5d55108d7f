#pragma once
// loadlab-target's command line: the flags (every value taken as text, so that each error names
// its flag and the range allowed) and their check into the server's options. Bad values throw
// InputError naming the flag (exit status 2); a certificate that cannot be made throws
// EnvironmentError (exit status 1).
#include <CLI/CLI.hpp>
#include <string>

#include "server.hpp"

namespace loadlab::target {

struct TargetFlags {
  std::string listen = "127.0.0.1:0";
  std::string threads;  // default: the machine's cores
  std::string acceptor = "shared";
  std::string delay = "0";
  std::string work = "0";
  std::string body = "Have Fun ~ Tester !";
  std::string body_size;
  std::string status = "200";
  std::string stall;
  std::string read_timeout = "10000";
  std::string idle_timeout = "60000";
  std::string log_level = "warn";
  std::string h3_retry = "auto";
  bool tls = false;
  bool h3 = false;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_cert_out;
  bool any_tls() const { return tls || h3 || !tls_cert.empty() || !tls_key.empty() || !tls_cert_out.empty(); }
};

void add_target_flags(CLI::App& app, TargetFlags& flags);

// What adds TLS and QUIC to the options (--tls, --tls-cert, --tls-key, --tls-cert-out, --h3):
// add_secure_options in loadlab-target-secure; null in loadlab-target, which hands such a
// command line over to loadlab-target-secure (target_main).
using AddSecure = void (*)(const TargetFlags&, ServerOptions&);

// The server's options; with `add_secure`, TLS included (its certificate read, or made and
// written where --tls-cert-out says).
ServerOptions target_options(const TargetFlags& flags, AddSecure add_secure);

// loadlab-target-secure's AddSecure (secure_flags.cpp, linked with loadlab_target_secure).
void add_secure_options(const TargetFlags& flags, ServerOptions& options);

// The program (exit statuses of loadlab/shared/program.hpp): parses the flags, serves until
// SIGINT or SIGTERM, prints `requests N`. Without `add_secure`, a command line that asks for
// TLS or HTTP/3 executes loadlab-target-secure beside this binary with the same arguments (the
// same process: its pid, its parent and its cgroup stay).
int target_main(int argc, char** argv, AddSecure add_secure);

}  // namespace loadlab::target
