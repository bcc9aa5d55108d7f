#pragma once
// The open-file limit: a process that holds many sockets (an agent's targets and workers at
// thousands of connections, a controller with a channel to every agent of a large lab)
// raises its soft limit to the hard one. systemd and shells start programs at 1024.
#include <string>

namespace loadlab {

// Raises RLIMIT_NOFILE's soft limit to its hard limit. Returns "" when it is (or already was)
// raised, otherwise why not, naming the limit that stays.
std::string raise_open_file_limit();

}  // namespace loadlab
