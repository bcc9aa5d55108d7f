#pragma once
// Whether this machine has an IPv6 loopback, decided by the test itself rather than by the code
// under test: a TCP socket bound to [::1]:0. A test skips only when this probe fails; past it,
// the code under test must listen on ::1.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace loadlab::testing {

// "" when a TCP socket can be bound to [::1]:0, else why not (the skip message).
inline std::string ipv6_loopback_missing() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("no IPv6 socket: ") + std::strerror(errno);
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  address.sin6_port = 0;
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  const int error = errno;
  ::close(fd);
  return bound ? std::string()
               : std::string("no IPv6 loopback: cannot bind [::1]:0: ") + std::strerror(error);
}

}  // namespace loadlab::testing
