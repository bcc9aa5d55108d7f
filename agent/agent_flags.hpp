#pragma once
// loadlab-agent's command line: its flags, and their check into AgentOptions (callers proven on
// a network address, credential files, --allow-load-to, --job-user, the catalog). Bad values
// throw InputError naming the flag (exit status 2).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/caller_auth.hpp"
#include "loadlab/metrics/server.hpp"

namespace loadlab::agent {

struct AgentFlags {
  AgentOptions options;  // the flags that map straight onto it
  std::string listen = "127.0.0.1:7700";
  std::string advertise;       // "" = the --listen address when it names one, else loopback
  std::string metrics_listen;  // "" = no metrics endpoint
  std::string log_level = "info";
  std::string catalog_file;
  TlsFiles tls;
  std::string token_file;
  bool allow_readable_credentials = false;
  std::string job_user;
  std::vector<std::string> allow_load_to;
  double test_clock_offset_ms = 0;  // hidden: AgentOptions::test_clock_offset_ns
};

void add_agent_flags(CLI::App& app, AgentFlags& flags);

// The metrics endpoint's TLS: the agent's own (--tls-cert, --tls-key, --tls-client-ca).
metrics::ServerTls metrics_tls(const AgentFlags& flags);

// The agent's options from the flags, checked (files read: the token, the catalog).
AgentOptions agent_options(const AgentFlags& flags);

}  // namespace loadlab::agent
