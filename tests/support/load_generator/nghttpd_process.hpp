#pragma once
// nghttpd (Debian's nghttp2-server) as a child process for the HTTP/2 load tests: serves a
// directory on 127.0.0.1, h2c (--no-tls) or h2 over TLS with a given key and certificate;
// with `verbose` it logs every frame with its connection's id ("[id=N]"), from which the
// connections it accepted are counted. Stopped by pid (peer_process.hpp).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "peer_process.hpp"

namespace loadlab::load::testing {

inline constexpr const char* kNghttpd = "/usr/sbin/nghttpd";

struct NghttpdOptions {
  std::string docroot;
  std::string log;        // stdout and stderr go here
  std::string key, cert;  // both set: h2 over TLS; else h2c
  bool verbose = false;
  std::vector<std::string> extra_args;  // e.g. {"--echo-upload"}
};

class NghttpdProcess {
 public:
  static bool available() { return access(kNghttpd, X_OK) == 0; }

  explicit NghttpdProcess(NghttpdOptions options) : options_(std::move(options)) {
    // A free port, probed by binding it; another process may take it before nghttpd
    // does, so a start that fails is tried again on another.
    for (int attempt = 0; attempt < 5 && port_ == 0; ++attempt) {
      uint16_t port = free_loopback_port(SOCK_STREAM);
      if (port != 0 && spawn(port) && wait_ready(port)) port_ = port;
      if (port_ == 0) process_.stop();
    }
  }
  ~NghttpdProcess() { stop(); }
  NghttpdProcess(const NghttpdProcess&) = delete;
  NghttpdProcess& operator=(const NghttpdProcess&) = delete;

  uint16_t port() const { return port_; }  // 0 when it did not start
  std::string url(const std::string& path = "/") const {
    return std::string(options_.key.empty() ? "http" : "https") + "://127.0.0.1:" + std::to_string(port_) +
           path;
  }

  // Stops it (its log is then complete).
  void stop() { process_.stop(); }

  // After stop() with `verbose`: the HTTP/2 connections it served (distinct "[id=N]" that
  // received a SETTINGS frame: the readiness probe, which sends nothing, is not one).
  int64_t connections() const {
    std::ifstream in(options_.log);
    std::set<std::string> ids;
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("[id=", 0) == 0 && line.find("recv SETTINGS frame") != std::string::npos &&
          line.find("flags=0x00") != std::string::npos)
        ids.insert(line.substr(0, line.find(']')));
    return static_cast<int64_t>(ids.size());
  }

 private:
  bool spawn(uint16_t port) {
    std::vector<std::string> args = {kNghttpd, "-a", "127.0.0.1", "-d", options_.docroot};
    if (options_.verbose) args.push_back("-v");
    args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
    if (options_.key.empty()) args.push_back("--no-tls");
    args.push_back(std::to_string(port));
    if (!options_.key.empty()) {
      args.push_back(options_.key);
      args.push_back(options_.cert);
    }
    return process_.spawn(std::move(args), options_.log);
  }

  // Until it accepts a connection (true) or exits or 5 s pass (false).
  bool wait_ready(uint16_t port) {
    for (int i = 0; i < 500; ++i) {
      if (!process_.running()) return false;
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port);
      bool up = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      close(fd);
      if (up) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  NghttpdOptions options_;
  PeerProcess process_;
  uint16_t port_ = 0;
};

}  // namespace loadlab::load::testing
