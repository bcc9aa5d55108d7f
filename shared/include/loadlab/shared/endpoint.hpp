#pragma once
// HOST:PORT parsing shared by the binaries ("127.0.0.1:8080", "[::1]:0", "localhost:80").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loadlab {

struct Endpoint {
  std::string host;  // without brackets
  uint16_t port = 0;
  std::string to_string() const;  // brackets IPv6 literals
};

// Returns nullopt when `text` is not HOST:PORT with a port in 0..65535.
[[nodiscard]] std::optional<Endpoint> parse_endpoint(std::string_view text);

// True for an address only this machine can reach: HOST:PORT whose host is in 127.0.0.0/8,
// ::1 (or ::ffff:127.x.y.z) or "localhost", and unix:PATH. The agent's --listen and the
// lab's agent addresses are judged by it alike.
bool is_loopback_address(std::string_view address);

}  // namespace loadlab
