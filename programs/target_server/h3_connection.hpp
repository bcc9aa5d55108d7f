#pragma once
// One HTTP/3 connection: a QUIC connection (ngtcp2_conn, its TLS a gnutls session) carrying
// HTTP/3 (nghttp3_conn). Both libraries work in memory; H3Server owns the UDP socket, hands
// this connection the datagrams whose connection id is its own, and sends what it writes.
//
// Each request stream is answered like an HTTP/1.1 request or an HTTP/2 stream (answer.hpp):
// the CPU work when its request is whole, then the delay and any stall on the connection's one
// timer of delays, whose queue names a stream by id and slot (a stream reset meanwhile frees
// its slot, so its turn is skipped), as H2Session does. A response counts once the packet
// carrying its last byte (its FIN) is sent.
//
// Timers: QUIC's own (loss detection, ACK delay, pacing, idle timeout), armed at
// ngtcp2_conn_get_expiry after every read and write; the delays; and a watchdog resetting a
// stream whose request is still incomplete `read_timeout` after it began.
//
// All handlers run on the io thread of the H3Server's io_context: no strand and no lock.
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <array>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "answer.hpp"
#include "io_worker.hpp"
#include "knobs.hpp"
#include "quic_tls.hpp"
#include "session_env.hpp"
#include "stream_responder.hpp"

struct nghttp3_conn;

namespace loadlab::target {

class H3Server;
struct H3FuzzPeer;  // tests/fuzz/h3_fuzz.cpp: drives a connection's HTTP/3 layer without QUIC

class H3Connection : public std::enable_shared_from_this<H3Connection> {
 public:
  using Clock = std::chrono::steady_clock;
  using udp = boost::asio::ip::udp;

  // `worker` owns the server's io_context; its counters are this connection's to bump.
  H3Connection(H3Server& server, const SessionEnv& env, IoWorker& worker);
  ~H3Connection();
  H3Connection(const H3Connection&) = delete;
  H3Connection& operator=(const H3Connection&) = delete;

  // Makes the QUIC connection for a client's first Initial packet (`initial` is its header, as
  // ngtcp2_accept decoded it), then reads that packet. False: dropped (nothing to answer).
  // `odcid`: the client's address was validated by a Retry, whose token carried the id of its
  // first Initial (the transport parameters must name both).
  bool start(const ngtcp2_pkt_hd& initial, const ngtcp2_cid& scid, const QuicTlsContext& tls,
             const udp::endpoint& local, const udp::endpoint& remote, const std::uint8_t* data,
             std::size_t size, const ngtcp2_cid* odcid = nullptr);

  // One datagram for this connection. The writes it causes wait for flush(), which the server
  // calls once per batch of datagrams read.
  void on_datagram(const udp::endpoint& remote, const std::uint8_t* data, std::size_t size);
  // Writes every packet ngtcp2 and nghttp3 have ready (within congestion control).
  void flush();
  // Shutting down: GOAWAY now, then CONNECTION_CLOSE once the streams open are answered.
  void initiate_shutdown();

 private:
  friend struct H3FuzzPeer;
  struct Glue;  // ngtcp2's and nghttp3's callbacks (h3_connection.cpp)

  // QUIC.
  static ngtcp2_callbacks quic_callbacks();  // ngtcp2 copies them into each connection
  bool setup_http();
  // The nghttp3 connection with our callbacks and settings, `max_streams` the client may open at
  // once; setup_http() makes it, then binds the unidirectional streams QUIC opens for it.
  [[nodiscard]] bool make_http(std::uint64_t max_streams);
  void on_read_error(int rv);
  void on_handshake_completed();
  void note_0rtt(const std::uint8_t* data, std::size_t size);
  void count_early_data();
  void start_closing();
  void start_draining();
  void wait_then_close();
  void abandon_requests();
  void close_now();
  void arm_expiry();
  void wait_for_expiry();
  void on_expiry(boost::beast::error_code ec);
  void send(const ngtcp2_path& path, const std::uint8_t* data, std::size_t size);
  void stream_written(std::int64_t stream_id, bool fin_sent);
  void http_write_failed(int rv);
  void credit_answered();

  // Streams: the responder answers them; these hand them over from nghttp3 and back. A slot is
  // freed when nghttp3 closes the stream, which is after the client acknowledged the whole
  // response: the body nghttp3 sends from (the text of a per-request body) must live until then.
  friend class StreamResponder<H3Connection, true>;
  RequestStream* stream(std::int64_t id);
  void begin_stream(std::int64_t id);
  void submit_response(RequestStream& s, const ResponseHead& head);
  void answered(RequestStream& s);
  void end_stream(RequestStream& s);
  bool responder_stopped() const { return closed_ || closing_ || draining_; }
  void consume(std::int64_t stream_id, std::size_t bytes);
  // STOP_SENDING (read), RESET_STREAM (write) or both for a stream, asked of QUIC.
  void shut_stream(std::int64_t id, std::uint64_t code, bool read, bool write);

  // The read timeout.
  void arm_watchdog(Clock::time_point at);
  void on_watchdog(boost::beast::error_code ec);

  H3Server& server_;
  const SessionEnv& env_;
  IoWorker& worker_;
  ngtcp2_conn* conn_ = nullptr;
  nghttp3_conn* http_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  ngtcp2_connection_close_error last_error_{};  // what our CONNECTION_CLOSE says
  bool error_set_ = false;
  udp::endpoint local_;
  udp::endpoint remote_;
  Random random_;
  boost::asio::steady_timer expiry_timer_;  // QUIC's timers; then the closing or draining period
  boost::asio::steady_timer watchdog_;      // read timeouts
  Clock::time_point expiry_at_ = Clock::time_point::max();  // when QUIC's timers next expire
  Clock::time_point timer_at_ = Clock::time_point::max();   // when the pending expiry wait wakes
  Clock::time_point watchdog_at_ = Clock::time_point::max();
  // Requests asking CPU work are answered in turns (answer.hpp's kTurnBudget): one batch of
  // datagrams can complete a thousand of them.
  StreamResponder<H3Connection, true> responder_;
  std::unordered_map<std::int64_t, RequestStream*> streams_;  // open request streams by id

  std::array<std::uint8_t, NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE> packet_;
  std::string close_packet_;  // CONNECTION_CLOSE, repeated in the closing period
  unsigned close_repeats_ = 0;
  Clock::time_point read_at_;
  bool handshake_done_ = false;
  bool tls_early_data_ = false;  // GnuTLS accepted the client's 0-RTT
  bool saw_0rtt_ = false;        // a 0-RTT packet came
  bool early_counted_ = false;
  bool shutting_down_ = false;  // the GOAWAY notice is sent
  bool goaway_sent_ = false;    // the final GOAWAY
  bool closing_ = false;        // our CONNECTION_CLOSE is sent
  bool draining_ = false;       // the client's CONNECTION_CLOSE came
  bool closed_ = false;         // gone from the server's map
  bool flush_posted_ = false;
  // A connection never start()ed has no QUIC connection (conn_ null: the h3 fuzz target's). What
  // HTTP/3 asked of QUIC's streams is noted here instead, for the test to play QUIC's part.
  struct DetachedShut {
    std::int64_t id;
    std::uint64_t code;
    bool read, write;
  };
  std::vector<DetachedShut> detached_shuts_;
};

}  // namespace loadlab::target
