#pragma once
// Free ports for catalog targets, and readiness probes.
//
// The agent asks the kernel for a free port (bind to port 0) and then reserves it
// machine-wide with flock() on /tmp/loadlab-ports/PORT, held while the job runs, so two
// jobs or two agents on one machine never hand out the same port while it is in use.
#include <cstdint>
#include <string>

#include "loadlab/shared/endpoint.hpp"

namespace loadlab::agent {

class PortReservation {
 public:
  // Throws EnvironmentError if no port could be reserved on `host`.
  explicit PortReservation(const std::string& host, const std::string& lock_dir = "/tmp/loadlab-ports");
  ~PortReservation();
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  uint16_t port() const { return port_; }

 private:
  uint16_t port_ = 0;
  int lock_fd_ = -1;
};

// True once HOST:PORT accepts a TCP connection.
bool tcp_accepts(const Endpoint& ep);
// True once GET `path` on HOST:PORT answers with a 2xx status (1 s timeout per attempt).
bool http_ready(const Endpoint& ep, const std::string& path);

}  // namespace loadlab::agent
