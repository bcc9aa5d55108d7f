#pragma once
// One HTTP/2 client connection (--protocol h2): an nghttp2 client session over its Transport
// (PlainTransport, or TlsTransport in loadlab_load_secure: plain_transport.hpp),
// h2 over TLS (ALPN must select "h2") or h2c with prior knowledge over TCP, carrying up to
// `plan.streams` requests at once, each request a stream.
//
// I/O: one read always pending while the session is open; the whole read buffer goes to
// nghttp2_session_mem_recv, whose callbacks record the streams that ended; then free stream
// slots take their next requests and everything nghttp2 has to send is collected by
// nghttp2_session_mem_send into one buffer and written. One write in flight at a time: what
// becomes pending meanwhile stays in nghttp2 and goes out, coalesced, with the next write.
//
// Closed loop: a stream that ends is replaced at once (after the read that ended it).
// Open loop (--rate): a connection with a free stream takes the worker's next slot, as an
// HTTP/1.1 connection does (schedule.hpp), and sends it on that stream at its time; when every
// stream of every connection is busy the due request waits for the first one freed, and its
// latency still counts from its intended send time (no coordinated omission).
//
// Cost: the requests that wait for a new connection (the first `streams` after a connect,
// or the one request of a --no-keepalive connection) each paid its TCP connect and TLS
// handshake and are not reused; the requests after them are reused. The run's connect and
// handshake counts (LoadResult.connects, tls_handshakes) count each connection once.
//
// Failures: a stream the server resets (RST_STREAM, REFUSED_STREAM included) fails as a
// read error; one nghttp2
// resets because the response broke HTTP/2's rules, as a bad response; a stream that
// passes --timeout is cancelled (RST_STREAM CANCEL) and fails as a timeout, the connection
// stays. GOAWAY: the streams up to its last stream id complete as usual; the ones above it
// were not processed (RFC 9113 §6.8) and are sent again, once, on a new connection (a second
// refusal fails as a read error); the draining connection takes no new stream and closes
// when its last one ends. Losing the connection fails every stream in flight (read, write,
// or timeout when a write or the connect outlived --timeout).
//
// --tls-resume: a connection this side closes (--no-keepalive, GOAWAY, end of the run) ends
// with a TLS close_notify, as servers forget a session whose connection ended without one.
//
// The definitions are in h2_connection_impl.hpp, instantiated once per transport
// (h2_connection.cpp, tls_connections.cpp). Lives on its worker's thread; every method runs
// there. Internal to loadlab_load.
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "dialer.hpp"
#include "multiplexed_connection.hpp"

namespace loadlab::load {

// One request: waiting for the connection (queued) or a stream of the session (open); its
// bytes are the response's frames, 9-byte headers and payloads.
struct H2Slot : StreamRequest<int32_t> {
  bool reset_by_peer = false;  // the server sent RST_STREAM
  size_t body_sent = 0;        // of the request body
};

template <class Transport>
class H2Connection final : public MultiplexedConnection<H2Connection<Transport>, H2Slot> {
  using Base = MultiplexedConnection<H2Connection<Transport>, H2Slot>;
  using Base::cost_, Base::draining_, Base::preconnect_, Base::read_time_, Base::slots_, Base::state_,
      Base::stopped_, Base::worker_;
  using typename Base::State;

 public:
  // `index`: this connection's place among its worker's connections (its waiter's index).
  H2Connection(Worker& worker, int index);
  ~H2Connection() override;

  void check_deadline(Clock::time_point now) override;

 private:
  friend Base;
  using Slot = H2Slot;

  // nghttp2's callbacks; `user_data` is the connection.
  static int on_begin_frame(nghttp2_session* session, const nghttp2_frame_hd* hd, void* user_data);
  static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data);
  static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags, void* user_data);
  static int on_stream_close(nghttp2_session* session, int32_t stream_id, uint32_t error_code,
                             void* user_data);
  static ssize_t read_body(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                           uint32_t* data_flags, nghttp2_data_source* source, void* user_data);
  static const nghttp2_session_callbacks* callbacks();

  Slot* slot_of(int32_t stream_id) {
    return static_cast<Slot*>(nghttp2_session_get_stream_user_data(session_, stream_id));
  }
  void pump();  // takes due requests, connects or submits, writes, closes when idle
  bool submit(Slot& slot, Clock::time_point now);
  void cancel_stream(Slot& slot);
  void cut_connect() { transport_.close(); }  // on_connect or on_handshake ends the loop
  void close_io() { transport_.close(); }
  void flush();
  void do_connect();
  void on_connect(std::optional<ErrorKind> failure);
  void connect_failed(ErrorKind kind);
  void ready();
  bool open_session();
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t bytes);
  void on_write(const boost::system::error_code& ec);
  void stream_closed(Slot& slot, uint32_t error_code);
  // Ends the session; with `kind`, every open stream fails with it, else they are dropped.
  void close_connection(std::optional<ErrorKind> kind);
  void send_close_notify();
  void maybe_closed();  // kClosing → kIdle once no operation is pending
  void delete_session();

  Transport transport_;
  Dialer<Transport> dialer_;
  nghttp2_session* session_ = nullptr;
  std::vector<nghttp2_nv> nva_;  // the request's header fields (header_fields)
  std::unique_ptr<uint8_t[]> read_buffer_;
  std::vector<uint8_t> out_;  // what the write in flight sends
  Clock::time_point write_started_{};
  bool reading_ = false;
  bool writing_ = false;
  bool close_notify_ = false;  // kClosing: a close_notify goes once the write in flight is done
  bool timed_out_ = false;
};

}  // namespace loadlab::load
