#pragma once
// Timing constants of the protocol, defined once for the controller and the agents.
namespace loadlab::timing {

// gRPC keepalive on every controller ⇄ agent channel, both ends: a peer that vanished
// (killed, or the network cut) is noticed within about time + timeout, and its streams are
// cancelled, so the agent stops their children and the controller fails the cell.
inline constexpr int kKeepaliveTimeMs = 2000;
inline constexpr int kKeepaliveTimeoutMs = 3000;
// The agent accepts pings this often (the controller's keepalive) without calling them abuse.
inline constexpr int kMinPingIntervalMs = 1000;
// The controller sends a heartbeat mark on a target stream this often, so that an agent can
// tell a stream that is waiting for a long load from one its peer abandoned while holding the
// target slot (limits::kMinIdleTimeoutS is a few of these).
inline constexpr int kHeartbeatMs = 5'000;

}  // namespace loadlab::timing
