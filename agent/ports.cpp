#include "loadlab/agent/ports.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "loadlab/shared/environment_error.hpp"

namespace loadlab::agent {

namespace {

// A connected socket to ep, or -1. Sends and receives time out after `timeout_s`.
int connect_to(const Endpoint& ep, int timeout_s) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (auto* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  return fd;
}

// A port the kernel considers free on `host` right now, and the socket bound to it (`bound`):
// while that socket stays open, the kernel gives the next caller another port.
uint16_t kernel_free_port(const std::string& host, int& bound) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "0", &hints, &res) != 0 || !res)
    throw EnvironmentError("cannot resolve target host " + host);
  int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  uint16_t port = 0;
  if (fd >= 0 && bind(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  int e = errno;
  freeaddrinfo(res);
  if (port == 0) {
    if (fd >= 0) close(fd);
    throw system_failure("cannot bind a port on " + host, e);
  }
  bound = fd;
  return port;
}

// Sockets held while the reservation looks for a port, closed when it is done.
struct HeldSockets {
  std::vector<int> fds;
  ~HeldSockets() {
    for (int fd : fds) close(fd);
  }
};

}  // namespace

PortReservation::PortReservation(const std::string& host, const std::string& lock_dir) {
  // The folder is shared by the agents of this machine. One that another user made (or a
  // link in its place) could be theirs to fill with links to files of ours: refused. Lock
  // files are opened without following links.
  if (mkdir(lock_dir.c_str(), 01777) == 0) chmod(lock_dir.c_str(), 01777);  // past the umask
  struct stat st {};
  if (lstat(lock_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw EnvironmentError("the port lock folder " + lock_dir + " is not a folder (a link?)");
  if (st.st_uid != geteuid() && st.st_uid != 0)
    throw EnvironmentError("the port lock folder " + lock_dir + " belongs to uid " +
                           std::to_string(st.st_uid) + ", not to this user (uid " +
                           std::to_string(geteuid()) + ") or root: remove it, or run the agents as one user");
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
    throw EnvironmentError("the port lock folder " + lock_dir +
                           " can be written by every user but has no sticky bit (chmod 1777 it)");
  // A port passed over stays bound until the end, so that each attempt is another port: the
  // kernel would otherwise offer the same one again.
  HeldSockets passed;
  for (int attempt = 0; attempt < 50; ++attempt) {
    int bound = -1;
    uint16_t port = kernel_free_port(host, bound);
    passed.fds.push_back(bound);
    std::string file = lock_dir + "/" + std::to_string(port);
    int fd = open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0644);
    bool writable = fd >= 0;
    // Another user's lock file (a root agent's, 0644) is locked through a read-only descriptor:
    // flock does not ask for write access, and the agents of every user must share each port's file.
    if (fd < 0 && errno == EACCES) fd = open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != EACCES && errno != ELOOP)  // not this file's: the folder's (read-only, full...)
      throw system_failure("cannot write a port lock in " + lock_dir);
    if (fd < 0) continue;  // a file this user cannot read, or a link: another port
    // The reservation is the lock itself: held while this object lives, released by the
    // kernel if the agent dies, so there are no stale reservations to judge.
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);  // another agent holds this port
      continue;
    }
    std::string pid = std::to_string(getpid()) + "\n";  // for people looking at the folder
    if (writable && ftruncate(fd, 0) == 0) {
      ssize_t n = pwrite(fd, pid.data(), pid.size(), 0);
      (void)n;
    }
    port_ = port;
    lock_fd_ = fd;
    return;
  }
  throw EnvironmentError("no free port could be reserved on " + host);
}

PortReservation::~PortReservation() {
  // The file stays: removing it could let two agents lock two different files of one port.
  if (lock_fd_ >= 0) close(lock_fd_);
}

bool tcp_accepts(const Endpoint& ep) {
  int fd = connect_to(ep, 1);
  if (fd < 0) return false;
  close(fd);
  return true;
}

bool http_ready(const Endpoint& ep, const std::string& path) {
  int fd = connect_to(ep, 1);
  if (fd < 0) return false;
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + ep.to_string() +
                    "\r\nUser-Agent: loadlab-agent-probe\r\nConnection: close\r\n\r\n";
  bool ok = false;
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    char buf[64] = {};
    size_t got = 0;
    while (got < 12) {
      ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    // "HTTP/1.x 2xx"
    ok = got >= 12 && std::strncmp(buf, "HTTP/1.", 7) == 0 && buf[9] == '2';
  }
  close(fd);
  return ok;
}

}  // namespace loadlab::agent
