#pragma once
// The program loadlab-load, loadlab-load-secure and loadlab-load-h3 all run (load_main.cpp).
#include "secure_clients.hpp"

namespace loadlab::load {

// One of the load generator's programs: its name and what it adds to the plain engine.
struct LoadProgram {
  const char* name;                         // "loadlab-load", "loadlab-load-secure", "loadlab-load-h3"
  MakeSecureClients make_secure = nullptr;  // null in loadlab-load
};

// Runs `program`. A command line of another family (an https:// URL: loadlab-load-secure;
// --protocol h3: loadlab-load-h3) is handed over to that program beside this binary with the
// same arguments (the pid stays: the agent's sampler, cgroup and stop keep working); any program
// runs a plain one.
int load_main(int argc, char** argv, const LoadProgram& program);

}  // namespace loadlab::load
