// One HTTP/1.1 GET on a connection of its own, for tests that check a server from outside.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

#include "loadlab/shared/endpoint.hpp"

namespace loadlab::testing {

// An HTTP reply: its status (0: no reply), its header block and body.
struct HttpReply {
  int status = 0;
  std::string headers;
  std::string body;
};

// GET `path` on `endpoint` (one request, Connection: close; `headers` are extra header lines,
// each ending in \r\n).
inline HttpReply http_get(const std::string& endpoint, const std::string& path,
                          const std::string& headers = "") {
  HttpReply reply;
  auto ep = parse_endpoint(endpoint);
  if (!ep) return reply;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(ep->port);
  inet_pton(AF_INET, ep->host.c_str(), &a.sin_addr);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string req =
        "GET " + path + " HTTP/1.1\r\nHost: " + endpoint + "\r\nConnection: close\r\n" + headers + "\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  auto end = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return reply;
  reply.status = std::atoi(response.c_str() + 9);
  reply.headers = response.substr(0, end);
  reply.body = response.substr(end + 4);
  return reply;
}

// The body of GET `path` on `endpoint`; "" on failure.
inline std::string http_get_body(const std::string& endpoint, const std::string& path) {
  return http_get(endpoint, path).body;
}

// The requests a loadlab-target on `endpoint` has answered so far: GET /__loadlab/stats (not
// counted itself); none when it does not answer.
inline std::optional<uint64_t> target_served(const std::string& endpoint) {
  const auto body = http_get_body(endpoint, "/__loadlab/stats");
  std::smatch m;
  if (!std::regex_search(body, m, std::regex(R"("requests":\s*(\d+))"))) return std::nullopt;
  return std::stoull(m[1]);
}

}  // namespace loadlab::testing
