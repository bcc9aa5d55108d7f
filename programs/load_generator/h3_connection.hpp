#pragma once
// One HTTP/3 client connection (--protocol h3): a QUIC connection (ngtcp2, TLS 1.3 through
// GnuTLS) over its own connected UDP socket, HTTP/3 framing and QPACK by nghttp3, carrying up
// to `plan.streams` requests at once, each request a bidirectional stream.
//
// I/O: one wait for readability always pending while the connection lives; each wake-up
// reads every datagram queued (non-blocking receives) into ngtcp2_conn_read_pkt, whose
// callbacks feed the request streams to nghttp3 and record the streams that ended; then free
// stream slots take their next requests and every packet ngtcp2 has to send (nghttp3's frames
// pulled by ngtcp2_conn_writev_stream) goes out at once, one send() each; a send the socket
// refuses (EAGAIN) waits for writability. One timer follows ngtcp2_conn_get_expiry
// (retransmission, ACK delay, pacing, idle timeout); it is re-armed only when that time moves.
//
// The loop (closed, open with --rate, --no-keepalive, GOAWAY) is H2Connection's: a stream that
// ends is replaced at once; in open loop a due request waits for a free stream, its latency
// counted from its intended send time. A stream the server resets fails as a read error,
// except H3_REQUEST_REJECTED (not processed: sent once more, like a GOAWAY'd stream); one that
// passes --timeout is cancelled (H3_REQUEST_CANCELLED) and fails as a timeout.
//
// Cost: QUIC has no connect apart from its handshake. A new connection counts as a connect
// (LoadResult.connects) with no TCP connect time, and as a TLS handshake (tls_handshakes, the
// handshake's time from the first Initial sent to HANDSHAKE_DONE's counterpart, the
// handshake-completed event); the requests that waited for it paid the handshake
// (CSV tls_us), the later ones are reused.
//
// --tls-resume: a reconnecting connection offers the session ticket its previous connection
// received (GnuTLS session data). --zero-rtt (with --tls-resume): it also sends the requests
// that waited for it as 0-RTT early data, with the server's transport parameters of the
// previous connection; when the server refuses the early data (ngtcp2_conn_early_data_rejected)
// those requests go again once the handshake is done, so nothing is lost or counted twice.
//
// Lives on its worker's thread; every method runs there. Internal to loadlab_load.
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "multiplexed_connection.hpp"

namespace loadlab::load {

// One request; its bytes are the response stream's: HTTP/3 frames (HEADERS, DATA) with their
// headers.
struct H3Slot : StreamRequest<int64_t> {
  bool body_given = false;
};

class H3Connection final : public MultiplexedConnection<H3Connection, H3Slot> {
 public:
  // `index`: this connection's place among its worker's connections (its waiter's index).
  H3Connection(Worker& worker, int index);
  ~H3Connection() override;

  void check_deadline(Clock::time_point now) override;

 private:
  friend class MultiplexedConnection<H3Connection, H3Slot>;
  using Slot = H3Slot;
  using Socket =
      boost::asio::basic_datagram_socket<boost::asio::ip::udp, boost::asio::io_context::executor_type>;
  using Timer = boost::asio::basic_waitable_timer<Clock, boost::asio::wait_traits<Clock>,
                                                  boost::asio::io_context::executor_type>;

  struct Glue;  // ngtcp2's and nghttp3's callbacks (h3_connection.cpp)

  void pump();
  bool submit(Slot& slot, Clock::time_point now);
  void cancel_stream(Slot& slot);
  void cut_connect() { close_connection(std::nullopt); }
  void close_io();
  void do_connect();
  bool open_quic(std::string& error);
  bool open_socket(std::string& error);
  bool open_http3();
  void handshake_done();
  bool early_data_rejected();
  void do_wait_read();
  void on_readable(const boost::system::error_code& ec);
  [[nodiscard]] bool read_packets();
  void write_packets();
  bool send_packet(const uint8_t* data, size_t size);
  void on_writable(const boost::system::error_code& ec);
  void arm_timer();
  void wait_for_expiry();
  void on_timer(const boost::system::error_code& ec);
  void stream_closed(Slot& slot, uint64_t app_error_code);
  // A failure of the QUIC connection (its error is in `failure`, its kind in `kind`).
  void connection_failed(int liberr);
  void connect_failed(ErrorKind kind, const std::string& reason);
  // Ends the connection; with `kind` every open stream fails with it, else they are dropped.
  // `close`: send a CONNECTION_CLOSE first (not when the peer already closed or went silent).
  void close_connection(std::optional<ErrorKind> kind, bool close = true);
  void maybe_closed();
  void free_quic();
  uint64_t now_ts() const;

  Socket socket_;
  Timer timer_;
  ngtcp2_conn* conn_ = nullptr;
  nghttp3_conn* h3_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  ngtcp2_path_storage path_{};
  std::vector<nghttp3_nv> nva_;  // the request's header fields (header_fields)
  std::unique_ptr<uint8_t[]> read_buffer_;
  std::vector<uint8_t> packet_;  // the packet a full socket buffer held back
  size_t packet_size_ = 0;       // of it; 0 = none
  std::vector<uint8_t> out_;     // where ngtcp2 writes the next packet
  Clock::time_point handshake_started_{};
  Clock::time_point deadline_ = Clock::time_point::max();  // the handshake's
  std::optional<Clock::time_point> armed_;                 // the pending timer wait's expiry
  std::optional<Clock::time_point> expiry_;                // when QUIC's timers next expire
  // --tls-resume: the newest session ticket and, for --zero-rtt, the server's transport
  // parameters, both from the previous connection.
  std::vector<unsigned char> ticket_;
  std::optional<ngtcp2_transport_params> early_params_;
  bool reading_ = false;
  bool write_waiting_ = false;
  int timer_waits_ = 0;
  bool got_packet_ = false;    // the server answered this connection at all
  bool early_ = false;         // this connection tried 0-RTT
  bool handshaken_ = false;    // the handshake completed (set in ngtcp2's callback)
  bool rejected_ = false;      // the server refused the early data (set in ngtcp2's callback)
  bool first_connect_ = true;  // no connection of this one has been tried yet
};

}  // namespace loadlab::load
