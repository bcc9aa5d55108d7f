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

// The server's options, TLS included (its certificate read, or made and written where
// --tls-cert-out says).
ServerOptions target_options(const TargetFlags& flags);

}  // namespace loadlab::target
