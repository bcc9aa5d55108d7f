#pragma once
// gtlsserver (ngtcp2's example HTTP/3 server, Debian's ngtcp2-server; GnuTLS) as a child
// process for the HTTP/3 load tests: serves a directory on 127.0.0.1 over QUIC with a given
// key and certificate, and logs every connection and request, from which the handshakes it
// completed and the requests it answered are counted. Stopped by pid (peer_process.hpp).
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "peer_process.hpp"

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
      uint16_t port = free_loopback_port(SOCK_DGRAM);
      if (port != 0 && spawn(port) && wait_ready(port)) port_ = port;
      if (port_ == 0) process_.stop();
    }
  }
  ~GtlsServerProcess() { stop(); }
  GtlsServerProcess(const GtlsServerProcess&) = delete;
  GtlsServerProcess& operator=(const GtlsServerProcess&) = delete;

  uint16_t port() const { return port_; }  // 0 when it did not start
  std::string url(const std::string& path = "/") const {
    return "https://127.0.0.1:" + std::to_string(port_) + path;
  }

  void stop() { process_.stop(); }

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
  bool spawn(uint16_t port) {
    std::vector<std::string> args = {kGtlsServer,          "-d",         options_.docroot, "127.0.0.1",
                                     std::to_string(port), options_.key, options_.cert};
    return process_.spawn(std::move(args), options_.log);
  }

  // Until its UDP socket is bound (in /proc/net/udp, 127.0.0.1:port) or it exits or 5 s pass.
  bool wait_ready(uint16_t port) {
    char local[32];
    std::snprintf(local, sizeof local, "0100007F:%04X", port);
    for (int i = 0; i < 500; ++i) {
      if (!process_.running()) return false;
      std::ifstream in("/proc/net/udp");
      std::string line;
      while (std::getline(in, line))
        if (line.find(local) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  GtlsServerOptions options_;
  PeerProcess process_;
  uint16_t port_ = 0;
};

}  // namespace loadlab::load::testing
