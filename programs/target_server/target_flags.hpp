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

// What adds TLS (--tls, --tls-cert, --tls-key, --tls-cert-out) and QUIC (--h3) to the options:
// add_tls_options in loadlab-target-secure, add_h3_options in loadlab-target-h3; null in
// loadlab-target, which hands such a command line over to them (target_main).
using AddSecure = void (*)(const TargetFlags&, ServerOptions&);

// The server's options; with `add_secure`, TLS included (its certificate read, or made and
// written where --tls-cert-out says).
ServerOptions target_options(const TargetFlags& flags, AddSecure add_secure);

// loadlab-target-secure's AddSecure (secure_flags.cpp, linked with loadlab_target_secure): TLS.
void add_tls_options(const TargetFlags& flags, ServerOptions& options);
// loadlab-target-h3's (h3_flags.cpp, linked with loadlab_target_h3): TLS and HTTP/3.
void add_h3_options(const TargetFlags& flags, ServerOptions& options);

// One of the target's programs: its name and what it adds to the plain server.
struct TargetProgram {
  const char* name;  // "loadlab-target", "loadlab-target-secure", "loadlab-target-h3"
  AddSecure add_secure = nullptr;
};

// The program (exit statuses of loadlab/shared/program.hpp): parses the flags, serves until
// SIGINT or SIGTERM, prints `requests N`. A command line of another family (--tls and its
// files: loadlab-target-secure; --h3: loadlab-target-h3) executes that program beside this
// binary with the same arguments, once the plain flags are checked (the same process: its pid,
// its parent and its cgroup stay).
int target_main(int argc, char** argv, const TargetProgram& self);

}  // namespace loadlab::target
