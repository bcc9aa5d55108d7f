#pragma once
// The QUIC plumbing the built-in target, the load generator and the target's test client share:
// ngtcp2's clock, the random bytes QUIC asks for, the crypto callbacks every connection sets, and
// the loop that turns what nghttp3 and ngtcp2 have ready into UDP datagrams. What each side does
// with a datagram (the target's server socket, the load generator's connected socket, the test
// client's blocking one) stays with it, behind PacketSink.
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

namespace loadlab::quic {

using Clock = std::chrono::steady_clock;

// ngtcp2's timestamps are nanoseconds of the steady clock.
ngtcp2_tstamp timestamp(Clock::time_point t = Clock::now());
Clock::time_point time_point(ngtcp2_tstamp ts);

// Unpredictable bytes, for connection ids, stateless reset tokens and ngtcp2's own needs
// (PATH_CHALLENGE data): GnuTLS's GNUTLS_RND_RANDOM level.
void random_bytes(void* dest, std::size_t size);

enum class Role { client, server };
// The callbacks of ngtcp2_crypto (handshake, keys, packet protection, Retry for a client) and
// `rand`: the rest is the connection's own.
ngtcp2_callbacks crypto_callbacks(Role role);
// A get_new_connection_id callback for a connection nobody routes by id (a client): a random id
// and a random stateless reset token.
int random_connection_id(ngtcp2_conn* conn, ngtcp2_cid* cid, std::uint8_t* token, std::size_t size,
                         void* user_data);

// Where write_packets() puts what it writes.
class PacketSink {
 public:
  // `stream_id`'s bytes went into a packet, its FIN with them when `fin_sent` (after nghttp3 was
  // told). False: stop writing (the sink failed the connection).
  virtual bool stream_written(std::int64_t stream_id, bool fin_sent) { return true; }
  // A packet is ready. False: stop writing (the socket is full, or failed).
  virtual bool send(const ngtcp2_path& path, const std::uint8_t* data, std::size_t size) = 0;

 protected:
  ~PacketSink() = default;
};

struct WriteResult {
  enum class End {
    idle,         // nothing more to write now, or the congestion window is full
    stopped,      // the sink said stop
    more,         // `max_packets` went: the rest waits for another call
    http_failed,  // nghttp3 failed: `error` is its code
    quic_failed,  // ngtcp2 failed: `error` is its code
  };
  End end = End::idle;
  int error = 0;
  int packets = 0;  // sent
};

// Writes the packets ngtcp2 has ready, filled with the streams' data nghttp3 has ready (`http`
// null: QUIC's own frames only, before HTTP/3 is up), each into `packet` and on to the sink,
// until nothing more is ready or `max_packets` went. Flow control is nghttp3's business: a stream
// ngtcp2 finds blocked is blocked in nghttp3 too. `path`: where ngtcp2 writes the packet's path
// (null when the connection has one). Unless it failed, the connection's pacing learns `ts`.
WriteResult write_packets(ngtcp2_conn* conn, nghttp3_conn* http, std::span<std::uint8_t> packet,
                          ngtcp2_path* path, ngtcp2_tstamp ts, int max_packets, PacketSink& sink);

}  // namespace loadlab::quic
