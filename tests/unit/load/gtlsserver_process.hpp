#pragma once
// gtlsserver (ngtcp2's example HTTP/3 server, Debian's ngtcp2-server; GnuTLS) as a child
// process for the HTTP/3 load tests: serves a directory on 127.0.0.1 over QUIC with a given
// key and certificate, and logs every connection and request, from which the handshakes it
// completed and the requests it answered are counted. Stopped by pid (SIGTERM, then SIGKILL).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace loadlab::load::testing {

inline constexpr const char* kGtlsServer = "/usr/sbin/gtlsserver";

struct GtlsServerOptions {
  std::string docroot;
  std::string log;  // stdout and stderr go here
  std::string key, cert;
};

class GtlsServerProcess {
 public:
  static bool available() { return access(kGtlsServer, X_OK) == 0; }

  explicit GtlsServerProcess(GtlsServerOptions options) : options_(std::move(options)) {
    // A free UDP port, probed by binding it; another process may take it first, so a start
    // that fails is tried again on another.
    for (int attempt = 0; attempt < 5 && port_ == 0; ++attempt) {
      uint16_t port = free_udp_port();
      if (port != 0 && spawn(port) && wait_ready(port)) port_ = port;
      if (port_ == 0) stop();
    }
  }
  ~GtlsServerProcess() { stop(); }
  GtlsServerProcess(const GtlsServerProcess&) = delete;
  GtlsServerProcess& operator=(const GtlsServerProcess&) = delete;

  uint16_t port() const { return port_; }  // 0 when it did not start
  std::string url(const std::string& path = "/") const {
    return "https://127.0.0.1:" + std::to_string(port_) + path;
  }

  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 300 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }

  // After stop(): how often its log says `needle` at the start of a line.
  int64_t count(const std::string& needle) const {
    std::ifstream in(options_.log);
    int64_t n = 0;
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(needle, 0) == 0) ++n;
    return n;
  }
  int64_t handshakes() const { return count("QUIC handshake has completed"); }
  // The connections that received request data (a bidirectional stream's frame) in a 0-RTT
  // packet: "I… 0xCID frm rx N 0RTT STREAM(..) id=.. uni=0".
  int64_t early_data_connections() const {
    std::ifstream in(options_.log);
    std::set<std::string> ids;
    std::string line;
    while (std::getline(in, line))
      if (line.find(" frm rx ") != std::string::npos && line.find(" 0RTT STREAM(") != std::string::npos &&
          line.find(" uni=0") != std::string::npos)
        ids.insert(line.substr(0, line.find(" frm rx ")).substr(line.find(' ') + 1));
    return static_cast<int64_t>(ids.size());
  }
  // Each answered request logs one "http: stream 0x.. submit response headers".
  int64_t responses() const {
    std::ifstream in(options_.log);
    int64_t n = 0;
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("http: stream ", 0) == 0 && line.find(" submit response headers") != std::string::npos)
        ++n;
    return n;
  }

 private:
  static uint16_t free_udp_port() {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    uint16_t port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    close(fd);
    return port;
  }

  bool spawn(uint16_t port) {
    std::vector<std::string> args = {kGtlsServer,          "-d",         options_.docroot, "127.0.0.1",
                                     std::to_string(port), options_.key, options_.cert};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options_.log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    bool ok = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&actions);
    if (!ok) pid_ = -1;
    return ok;
  }

  // Until its UDP socket is bound (in /proc/net/udp, 127.0.0.1:port) or it exits or 5 s pass.
  bool wait_ready(uint16_t port) {
    char local[32];
    std::snprintf(local, sizeof local, "0100007F:%04X", port);
    for (int i = 0; i < 500; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::ifstream in("/proc/net/udp");
      std::string line;
      while (std::getline(in, line))
        if (line.find(local) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  GtlsServerOptions options_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace loadlab::load::testing
