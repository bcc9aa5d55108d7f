#pragma once
// The limits of the target's HTTP/3 side against a flood of Initials: address validation by
// Retry and caps on what the server keeps state for. In their own header so that the server's
// options need not include QUIC's.
#include <cstddef>

namespace loadlab::target {

// How the server asks a client to prove its address (a Retry round trip, RFC 9000 §8.1.2)
// before it keeps any state for it.
enum class H3Retry {
  never,   // no Retry: handshakes start at once (up to the handshake cap)
  auto_,   // Retry once more than kRetryAbove handshakes are in progress (a flood of Initials)
  always,  // every new connection proves its address first
};

struct H3Limits {
  H3Retry retry = H3Retry::auto_;
  std::size_t retry_above = 64;       // auto: handshakes in progress before Retry is asked
  std::size_t max_handshakes = 1024;  // handshakes in progress, address validated or not
  std::size_t max_connections = 16384;
};

}  // namespace loadlab::target
