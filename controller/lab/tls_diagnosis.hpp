#pragma once
// Why the controller cannot talk TLS to an agent, in the words of what to fix. gRPC reports a
// failed handshake as an unavailable channel (and, waiting for the channel to be ready, as a
// deadline), with the cause only in the agent's log; this asks the agent's port once more,
// with OpenSSL and the lab file's credentials, and names the cause.
#include <optional>
#include <string>

#include "lab/lab.hpp"

namespace loadlab::controller {

// For an agent with TLS credentials (def.credentials.ca_pem): what fails, e.g. "the agent's
// certificate is for DNS:srv1, not 198.18.1.5: set this agent's tls.server_name in the lab
// file to one of those names"; nullopt when there is no TLS or the handshake and the agent's
// first bytes go through (the failure is elsewhere). Waits at most `timeout_ms` in all.
std::optional<std::string> diagnose_tls(const AgentDef& def, int timeout_ms = 3000);

}  // namespace loadlab::controller
