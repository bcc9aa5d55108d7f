#pragma once
// The program loadlab-load and loadlab-load-secure both run (load_main.cpp).
#include "secure_clients.hpp"

namespace loadlab::load {

// `make_secure`: the TLS and QUIC family's (loadlab-load-secure); null in loadlab-load, which
// hands an https:// or h3 command line over to loadlab-load-secure beside it with the same
// arguments (the pid stays: the agent's sampler, cgroup and stop keep working).
int load_main(int argc, char** argv, MakeSecureClients make_secure);

}  // namespace loadlab::load
