#include "h3_connection.hpp"

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "loadlab/quic/packets.hpp"
#include "quic_tls_client.hpp"

namespace loadlab::load {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// A datagram is at most 64 KiB; QUIC packets here are at most the path's payload size.
constexpr std::size_t kReadSize = 64 * 1024;
constexpr std::size_t kPacketSize = 64 * 1024;
// Flow-control windows the client grants: large bodies never wait for a MAX_STREAM_DATA, as
// H2Connection's windows (h2load's defaults) for HTTP/2.
constexpr uint64_t kStreamWindow = 16 * 1024 * 1024;
constexpr uint64_t kConnectionWindow = 64 * 1024 * 1024;
constexpr std::size_t kScidLength = 17;
constexpr std::size_t kDcidLength = 18;

using quic::random_bytes;

// The client's QUIC settings: the handshake gives up after `timeout`.
void client_settings(ngtcp2_settings& settings, uint64_t initial_ts, Clock::duration timeout) {
  ngtcp2_settings_default(&settings);
  settings.initial_ts = initial_ts;
  settings.handshake_timeout =
      static_cast<ngtcp2_duration>(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count());
}

// The transport parameters the client announces: its flow-control windows and the streams
// the server may open.
void client_transport_params(ngtcp2_transport_params& params) {
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = kStreamWindow;
  params.initial_max_stream_data_uni = kStreamWindow;
  params.initial_max_data = kConnectionWindow;
  params.initial_max_streams_bidi = 0;  // the server opens none
  params.initial_max_streams_uni = 3;   // its control and QPACK streams
  params.max_idle_timeout = 30 * NGTCP2_SECONDS;
}

}  // namespace

// The callbacks of ngtcp2 (`user_data`) and nghttp3 (`conn_user_data`): the connection;
// `stream_user_data`: the request's Slot, or null for a stream whose request is gone
// (cancelled by a timeout) and for HTTP/3's own unidirectional streams. They only record and
// forward: nothing here tears the connection down (that waits for the library call to return).
struct H3Connection::Glue {
  static H3Connection* self(void* user_data) { return static_cast<H3Connection*>(user_data); }
  static Slot* slot(void* stream_user_data) { return static_cast<Slot*>(stream_user_data); }

  static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) { return self(ref->user_data)->conn_; }

  static int handshake_completed(ngtcp2_conn* conn, void* user_data) {
    H3Connection* c = self(user_data);
    c->handshaken_ = true;
    // The client learns whether the server took its 0-RTT data from the EncryptedExtensions.
    if (c->early_ && !(gnutls_session_get_flags(c->tls_) & GNUTLS_SFLAGS_EARLY_DATA))
      return ngtcp2_conn_early_data_rejected(conn) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  // The 1-RTT keys: the server's control and QPACK streams may come in the same flight as its
  // handshake, so HTTP/3 must be ready before any of their bytes is delivered (dropping
  // them would leave nghttp3 reading those streams from the middle).
  static int recv_rx_key(ngtcp2_conn*, ngtcp2_crypto_level level, void* user_data) {
    H3Connection* c = self(user_data);
    if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION || c->h3_) return 0;
    return c->open_http3() ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
  }

  static int early_data_rejected(ngtcp2_conn*, void* user_data) {
    return self(user_data)->early_data_rejected() ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
  }

  static int recv_stream_data(ngtcp2_conn* conn, uint32_t flags, int64_t stream_id, uint64_t,
                              const uint8_t* data, size_t length, void* user_data, void* stream_user_data) {
    H3Connection* c = self(user_data);
    if (Slot* s = slot(stream_user_data)) {
      if (s->first_byte == Clock::time_point{}) s->first_byte = c->read_time_;
      s->bytes += length;
    }
    if (!c->h3_) return 0;
    nghttp3_ssize used =
        nghttp3_conn_read_stream(c->h3_, stream_id, data, length, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
    if (used < 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    // What nghttp3 consumed itself (frame headers, QPACK); DATA payloads are consumed in recv_data.
    ngtcp2_conn_extend_max_stream_offset(conn, stream_id, static_cast<uint64_t>(used));
    ngtcp2_conn_extend_max_offset(conn, static_cast<uint64_t>(used));
    return 0;
  }

  static int acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t length,
                                      void* user_data, void*) {
    H3Connection* c = self(user_data);
    if (c->h3_ && nghttp3_conn_add_ack_offset(c->h3_, stream_id, length) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  static int stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t app_error_code,
                          void* user_data, void* stream_user_data) {
    H3Connection* c = self(user_data);
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = NGHTTP3_H3_NO_ERROR;
    if (c->h3_) {
      int rv = nghttp3_conn_close_stream(c->h3_, stream_id, app_error_code);
      if (rv == 0 || rv == NGHTTP3_ERR_STREAM_NOT_FOUND) return 0;
      return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    if (Slot* s = slot(stream_user_data)) c->stream_closed(*s, app_error_code);
    return 0;
  }

  static int stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t, void* user_data, void*) {
    H3Connection* c = self(user_data);
    if (c->h3_ && nghttp3_conn_shutdown_stream_read(c->h3_, stream_id) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  static int stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user_data, void*) {
    H3Connection* c = self(user_data);
    if (c->h3_ && nghttp3_conn_shutdown_stream_read(c->h3_, stream_id) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  static int extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user_data, void*) {
    H3Connection* c = self(user_data);
    if (c->h3_ && nghttp3_conn_unblock_stream(c->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  static int new_session_ticket(gnutls_session_t session, unsigned, unsigned, unsigned,
                                const gnutls_datum_t*) {
    auto* ref = static_cast<ngtcp2_crypto_conn_ref*>(gnutls_session_get_ptr(session));
    H3Connection* c = self(ref->user_data);
    gnutls_datum_t data{};
    if (gnutls_session_get_data2(session, &data) != 0) return 0;  // no ticket to keep: a full handshake next
    c->ticket_.assign(data.data, data.data + data.size);
    gnutls_free(data.data);
    return 0;
  }

  // --- nghttp3 ---
  static int recv_header(nghttp3_conn*, int64_t, int32_t token, nghttp3_rcbuf*, nghttp3_rcbuf* value, uint8_t,
                         void*, void* stream_user_data) {
    // The last :status wins: interim responses (1xx) come before the final one.
    Slot* s = slot(stream_user_data);
    if (!s || token != NGHTTP3_QPACK_TOKEN__STATUS) return 0;
    nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
    if (v.len == 3) s->status = (v.base[0] - '0') * 100 + (v.base[1] - '0') * 10 + (v.base[2] - '0');
    return 0;
  }

  static int consume(nghttp3_conn*, int64_t stream_id, size_t length, void* conn_user_data) {
    H3Connection* c = self(conn_user_data);
    ngtcp2_conn_extend_max_stream_offset(c->conn_, stream_id, length);
    ngtcp2_conn_extend_max_offset(c->conn_, length);
    return 0;
  }
  static int recv_data(nghttp3_conn* h3, int64_t stream_id, const uint8_t*, size_t length,
                       void* conn_user_data, void*) {
    return consume(h3, stream_id, length, conn_user_data);
  }
  static int deferred_consume(nghttp3_conn* h3, int64_t stream_id, size_t length, void* conn_user_data,
                              void*) {
    return consume(h3, stream_id, length, conn_user_data);
  }

  static int end_stream(nghttp3_conn*, int64_t, void*, void* stream_user_data) {
    if (Slot* s = slot(stream_user_data)) s->complete = true;
    return 0;
  }

  static int h3_stream_close(nghttp3_conn*, int64_t, uint64_t app_error_code, void* conn_user_data,
                             void* stream_user_data) {
    if (Slot* s = slot(stream_user_data)) self(conn_user_data)->stream_closed(*s, app_error_code);
    return 0;
  }

  static int stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* conn_user_data,
                          void*) {
    ngtcp2_conn_shutdown_stream_read(self(conn_user_data)->conn_, stream_id, app_error_code);
    return 0;
  }

  static int reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* conn_user_data,
                          void*) {
    ngtcp2_conn_shutdown_stream_write(self(conn_user_data)->conn_, stream_id, app_error_code);
    return 0;
  }

  // GOAWAY: the server takes no stream from that id on; the ones below it are answered.
  static int shutdown(nghttp3_conn*, int64_t, void* conn_user_data) {
    self(conn_user_data)->draining_ = true;
    return 0;
  }

  static nghttp3_ssize read_body(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t, uint32_t* flags,
                                 void* conn_user_data, void* stream_user_data) {
    Slot* s = slot(stream_user_data);
    *flags |= NGHTTP3_DATA_FLAG_EOF;
    if (!s || s->body_given) return 0;
    // The body lives in the plan for the whole run: nghttp3 may keep pointing into it until acked.
    const std::string& body = self(conn_user_data)->worker_.plan().body;
    vec[0].base = reinterpret_cast<uint8_t*>(const_cast<char*>(body.data()));
    vec[0].len = body.size();
    s->body_given = true;
    return 1;
  }

  static const ngtcp2_callbacks& quic_callbacks() {
    static const ngtcp2_callbacks callbacks = [] {
      ngtcp2_callbacks cb = quic::crypto_callbacks(quic::Role::client);
      cb.get_new_connection_id = quic::random_connection_id;
      cb.handshake_completed = handshake_completed;
      cb.early_data_rejected = early_data_rejected;
      cb.recv_rx_key = recv_rx_key;
      cb.recv_stream_data = recv_stream_data;
      cb.acked_stream_data_offset = acked_stream_data_offset;
      cb.stream_close = stream_close;
      cb.stream_reset = stream_reset;
      cb.stream_stop_sending = stream_stop_sending;
      cb.extend_max_stream_data = extend_max_stream_data;
      return cb;
    }();
    return callbacks;
  }

  static const nghttp3_callbacks& http3_callbacks() {
    static const nghttp3_callbacks callbacks = [] {
      nghttp3_callbacks cb{};
      cb.stream_close = h3_stream_close;
      cb.recv_data = recv_data;
      cb.deferred_consume = deferred_consume;
      cb.recv_header = recv_header;
      cb.stop_sending = stop_sending;
      cb.end_stream = end_stream;
      cb.reset_stream = reset_stream;
      cb.shutdown = shutdown;
      return cb;
    }();
    return callbacks;
  }
};

// Handlers capture a raw `this`: the worker owns its connections and destroys them only
// after its io_context has run out of work, i.e. after every handler has run.

H3Connection::H3Connection(Worker& worker, int index)
    : MultiplexedConnection(worker, index),
      socket_(worker.io().get_executor()),
      timer_(worker.io().get_executor()),
      nva_(header_fields<nghttp3_nv>(worker.plan(),
                                     NGHTTP3_NV_FLAG_NO_COPY_NAME | NGHTTP3_NV_FLAG_NO_COPY_VALUE)),
      read_buffer_(new uint8_t[kReadSize]),
      out_(kPacketSize) {
  conn_ref_.get_conn = &Glue::get_conn;
  conn_ref_.user_data = this;
}

H3Connection::~H3Connection() { free_quic(); }

uint64_t H3Connection::now_ts() const { return quic::timestamp(Clock::now()); }

void H3Connection::check_deadline(Clock::time_point now) {
  if (state_ == State::kConnecting && now > deadline_)
    return connect_failed(got_packet_ ? ErrorKind::kTls : ErrorKind::kConnect,
                          got_packet_ ? "QUIC handshake timed out" : "no answer to the QUIC handshake");
  if (state_ != State::kOpen) return;
  expire_streams(now);
}

// What still comes for the stream finds no slot and is dropped.
void H3Connection::cancel_stream(Slot& s) {
  ngtcp2_conn_set_stream_user_data(conn_, s.stream_id, nullptr);
  nghttp3_conn_set_stream_user_data(h3_, s.stream_id, nullptr);
  ngtcp2_conn_shutdown_stream(conn_, s.stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
}

void H3Connection::pump() {
  if (!fill_slots()) return;
  switch (state_) {
    case State::kIdle:
      if (!slots_.queued.empty()) return do_connect();
      if (slots_.done) end();
      return;
    case State::kConnecting:
      if (!handshaken_) {
        if (h3_) submit_queued();  // 0-RTT
        return write_packets();
      }
      handshake_done();
      if (state_ != State::kOpen) return;
      [[fallthrough]];
    case State::kOpen:
      if (!draining_) submit_queued();
      write_packets();
      // Done, but with requests still queued for streams the server has not allowed yet (its
      // MAX_STREAMS trails the streams closing): they wait for it here, not on a new connection.
      if (idle_to_close()) close_connection(std::nullopt);
      return;
    case State::kClosing:
      return;
  }
}

bool H3Connection::submit(Slot& s, Clock::time_point now) {
  int64_t id = -1;
  int rv = ngtcp2_conn_open_bidi_stream(conn_, &id, &s);
  if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) return false;  // until the server allows more streams
  if (rv != 0) {
    draining_ = true;
    return false;
  }
  s.body_given = false;
  nghttp3_data_reader body{&Glue::read_body};
  rv = nghttp3_conn_submit_request(h3_, id, nva_.data(), nva_.size(),
                                   worker_.plan().body.empty() ? nullptr : &body, &s);
  if (rv != 0) {
    ngtcp2_conn_set_stream_user_data(conn_, id, nullptr);
    ngtcp2_conn_shutdown_stream(conn_, id, NGHTTP3_H3_INTERNAL_ERROR);
    draining_ = true;
    return false;
  }
  opened(s, id, now);
  return true;
}

void H3Connection::do_connect() {
  state_ = State::kConnecting;
  got_packet_ = handshaken_ = rejected_ = early_ = draining_ = false;
  slots_.carried = 0;
  cost_ = {};
  handshake_started_ = Clock::now();
  deadline_ = handshake_started_ + worker_.plan().timeout;
  std::string error;
  if (!open_quic(error)) return connect_failed(ErrorKind::kTls, error);
  do_wait_read();
  pump();  // 0-RTT requests, then the Initial
}

// Opens the UDP socket, connected to the target, and keeps its local and remote addresses as
// the connection's path.
bool H3Connection::open_socket(std::string& error) {
  const auto& target = worker_.plan().endpoints.front();
  asio::ip::udp::endpoint remote(target.address(), target.port());
  error_code ec;
  socket_.open(remote.protocol(), ec);
  if (!ec) socket_.non_blocking(true, ec);
  if (!ec) socket_.connect(remote, ec);
  asio::ip::udp::endpoint local = ec ? asio::ip::udp::endpoint() : socket_.local_endpoint(ec);
  if (ec) {
    error = "UDP socket: " + ec.message();
    return false;
  }
  ngtcp2_path_storage_init(&path_, reinterpret_cast<const ngtcp2_sockaddr*>(local.data()),
                           static_cast<ngtcp2_socklen>(local.size()),
                           reinterpret_cast<const ngtcp2_sockaddr*>(remote.data()),
                           static_cast<ngtcp2_socklen>(remote.size()), nullptr);
  return true;
}

bool H3Connection::open_quic(std::string& error) {
  const RunPlan& plan = worker_.plan();
  if (!open_socket(error)) return false;
  ngtcp2_cid scid, dcid;
  scid.datalen = kScidLength;
  random_bytes(scid.data, scid.datalen);
  dcid.datalen = kDcidLength;
  random_bytes(dcid.data, dcid.datalen);

  ngtcp2_settings settings;
  client_settings(settings, now_ts(), plan.timeout);
  ngtcp2_transport_params params;
  client_transport_params(params);

  const bool resume = plan.quic->resume() && !ticket_.empty();
  tls_ = plan.quic->new_session(resume ? ticket_ : std::vector<unsigned char>{}, error);
  if (!tls_) return false;
  gnutls_session_set_ptr(tls_, &conn_ref_);
  if (plan.quic->resume())
    gnutls_handshake_set_hook_function(tls_, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_POST,
                                       &Glue::new_session_ticket);
  if (int rv = ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path_.path, NGTCP2_PROTO_VER_V1,
                                      &Glue::quic_callbacks(), &settings, &params, nullptr, this);
      rv != 0) {
    conn_ = nullptr;
    error = std::string("ngtcp2_conn_client_new: ") + ngtcp2_strerror(rv);
    return false;
  }
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  // 0-RTT: the requests waiting for this connection go with its first flight, under the
  // limits the server announced last time (RFC 9000 §7.4.1).
  if (resume && plan.quic->zero_rtt() && early_params_) {
    ngtcp2_conn_set_early_remote_transport_params(conn_, &*early_params_);
    early_ = true;
    if (!open_http3()) {
      error = "HTTP/3: cannot open the control streams for 0-RTT";
      return false;
    }
  }
  return true;
}

bool H3Connection::open_http3() {
  if (ngtcp2_conn_get_streams_uni_left(conn_) < 3) return false;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  if (nghttp3_conn_client_new(&h3_, &Glue::http3_callbacks(), &settings, nullptr, this) != 0) {
    h3_ = nullptr;
    return false;
  }
  // The QPACK decoder queues a Section Acknowledgement per response that used the dynamic
  // table until the next write, and fails (ERR_QPACK_FATAL) beyond 100 streams' worth unless
  // told how many streams may be open at once: up to plan.streams here.
  nghttp3_conn_set_max_concurrent_streams(h3_, static_cast<std::size_t>(worker_.plan().streams));
  int64_t control = -1, encoder = -1, decoder = -1;
  return ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) == 0 &&
         nghttp3_conn_bind_control_stream(h3_, control) == 0 &&
         ngtcp2_conn_open_uni_stream(conn_, &encoder, nullptr) == 0 &&
         ngtcp2_conn_open_uni_stream(conn_, &decoder, nullptr) == 0 &&
         nghttp3_conn_bind_qpack_streams(h3_, encoder, decoder) == 0;
}

// The server refused the 0-RTT data: ngtcp2 forgot the streams, HTTP/3's own among them; the
// requests go again, first in line, once the handshake is done, on a new HTTP/3 session made
// at once (the server's control streams follow in this very read).
bool H3Connection::early_data_rejected() {
  rejected_ = true;
  if (h3_) {
    nghttp3_conn_del(h3_);
    h3_ = nullptr;
  }
  std::vector<int> again;
  for (Slot& s : slots_) {
    if (s.state != Slot::State::kOpen) continue;
    s.state = Slot::State::kQueued;
    --slots_.open;
    --slots_.carried;
    again.push_back(slots_.index_of(s));
  }
  slots_.queued.insert(slots_.queued.begin(), again.begin(), again.end());
  return open_http3();
}

void H3Connection::handshake_done() {
  auto now = Clock::now();
  deadline_ = Clock::time_point::max();
  state_ = State::kOpen;
  const bool resumed = gnutls_session_is_resumed(tls_) != 0;
  worker_.record_quic_handshake(handshake_started_, now, resumed, early_ && !rejected_);
  worker_.note_connected();
  first_connect_ = false;
  cost_ = RequestCost{{}, now - handshake_started_, false, resumed};
  for (Slot& s : slots_)  // 0-RTT requests went on this new connection too
    if (s.state == Slot::State::kOpen) s.cost = cost_;
  if (!h3_ && !open_http3()) return close_connection(ErrorKind::kConnect);
  // What a 0-RTT attempt on the next connection may assume: the limits the server gave now.
  ngtcp2_transport_params params = *ngtcp2_conn_get_remote_transport_params(conn_);
  params.version_info = {};  // points into this connection; 0-RTT does not use it
  params.version_info_present = 0;
  early_params_ = params;
  submit_queued();
  cost_ = RequestCost{{}, {}, true, false};
}

void H3Connection::do_wait_read() {
  reading_ = true;
  socket_.async_wait(Socket::wait_read, [this](const error_code& ec) { on_readable(ec); });
}

void H3Connection::on_readable(const error_code& ec) {
  reading_ = false;
  if (!conn_ || (state_ != State::kConnecting && state_ != State::kOpen)) return maybe_closed();
  if (ec) return close_connection(ErrorKind::kRead, false);
  read_time_ = Clock::now();
  if (!read_packets()) return;
  pump();
  if (conn_ && (state_ == State::kConnecting || state_ == State::kOpen)) do_wait_read();
}

bool H3Connection::read_packets() {
  const ngtcp2_tstamp ts = quic::timestamp(read_time_);
  for (;;) {
    error_code ec;
    std::size_t n = socket_.receive(asio::buffer(read_buffer_.get(), kReadSize), 0, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return true;
    if (ec) {  // an ICMP error: nobody listens on that port (ECONNREFUSED), or the network
      if (!got_packet_)
        connect_failed(ErrorKind::kConnect, ec.message());
      else
        close_connection(ErrorKind::kRead, false);
      return false;
    }
    got_packet_ = true;
    ngtcp2_pkt_info pi{};
    int rv = ngtcp2_conn_read_pkt(conn_, &path_.path, &pi, read_buffer_.get(), n, ts);
    if (rv != 0) {
      connection_failed(rv);
      return false;
    }
  }
}

void H3Connection::write_packets() {
  if (!conn_ || write_waiting_) return;
  if (packet_size_ > 0) {
    if (!send_packet(packet_.data(), packet_size_)) return;
    packet_size_ = 0;
  }
  // A packet the socket cannot take now is kept, and goes first once it is writable.
  struct Sink final : quic::PacketSink {
    H3Connection& c;
    explicit Sink(H3Connection& c) : c(c) {}
    bool send(const ngtcp2_path&, const uint8_t* data, std::size_t size) override {
      if (c.send_packet(data, size)) return true;
      if (c.write_waiting_) {  // else the socket failed: the connection is being torn down
        c.packet_.assign(data, data + size);
        c.packet_size_ = size;
      }
      return false;
    }
  } sink(*this);
  const auto result = quic::write_packets(conn_, h3_, out_, &path_.path, now_ts(), INT_MAX, sink);
  if (result.end == quic::WriteResult::End::http_failed) return connection_failed(NGTCP2_ERR_INTERNAL);
  if (result.end == quic::WriteResult::End::quic_failed) return connection_failed(result.error);
  if (result.end == quic::WriteResult::End::stopped) return;
  arm_timer();
}

// True when the datagram went out; false when the socket buffer is full (write_waiting_:
// it goes once the socket is writable) or the socket failed (the connection then ends).
bool H3Connection::send_packet(const uint8_t* data, std::size_t size) {
  for (;;) {
    ssize_t rv = ::send(socket_.native_handle(), data, size, 0);
    if (rv >= 0) return true;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      write_waiting_ = true;
      socket_.async_wait(Socket::wait_write, [this](const error_code& ec) { on_writable(ec); });
      return false;
    }
    const std::string reason = std::strerror(errno);
    if (!got_packet_ && state_ == State::kConnecting)
      connect_failed(ErrorKind::kConnect, reason);
    else
      close_connection(ErrorKind::kWrite, false);
    return false;
  }
}

void H3Connection::on_writable(const error_code& ec) {
  write_waiting_ = false;
  if (!conn_ || (state_ != State::kConnecting && state_ != State::kOpen)) return maybe_closed();
  if (ec) return close_connection(ErrorKind::kWrite, false);
  write_packets();
}

// After every write. Most packets move QUIC's timers later (an ACK pushes the loss and idle
// timers back): then the pending wait is left as it is, and wakes early to wait again for the
// new expiry (on_timer), rather than re-programming the kernel's timer for every packet. Only
// an earlier expiry moves the wait.
void H3Connection::arm_timer() {
  const ngtcp2_tstamp expiry = ngtcp2_conn_get_expiry(conn_);
  expiry_ = expiry == UINT64_MAX ? std::nullopt : std::optional(quic::time_point(expiry));
  if (!expiry_ || (armed_ && *armed_ <= *expiry_)) return;
  wait_for_expiry();
}

void H3Connection::wait_for_expiry() {
  armed_ = expiry_;
  timer_.expires_at(*armed_);  // cancels a wait for a later expiry
  ++timer_waits_;
  timer_.async_wait([this](const error_code& ec) { on_timer(ec); });
}

void H3Connection::on_timer(const error_code& ec) {
  --timer_waits_;
  if (ec == asio::error::operation_aborted) return maybe_closed();
  armed_.reset();
  if (!conn_ || (state_ != State::kConnecting && state_ != State::kOpen)) return maybe_closed();
  if (!expiry_) return;                                   // no QUIC timer runs any more
  if (Clock::now() < *expiry_) return wait_for_expiry();  // moved later since the wait began
  if (int rv = ngtcp2_conn_handle_expiry(conn_, now_ts()); rv != 0) return connection_failed(rv);
  write_packets();
}

void H3Connection::stream_closed(Slot& s, uint64_t app_error_code) {
  const auto done = done_time();
  if (s.complete) return record_complete(s, done);
  if (app_error_code == NGHTTP3_H3_REQUEST_REJECTED && !s.retried) {  // not processed: once more
    s.retried = true;
    slots_.requeue(s);
    return;
  }
  worker_.record_failure(s.measured, s.origin, done, ErrorKind::kRead, s.cost);
  slots_.release(s);
}

void H3Connection::connection_failed(int liberr) {
  switch (liberr) {
    case NGTCP2_ERR_DRAINING:  // the server closed the connection (CONNECTION_CLOSE)
    case NGTCP2_ERR_DROP_CONN:
    case NGTCP2_ERR_IDLE_CLOSE: {
      if (state_ == State::kConnecting) {
        ngtcp2_connection_close_error cc{};
        ngtcp2_conn_get_connection_close_error(conn_, &cc);
        std::string reason = "the server closed the connection during the QUIC handshake";
        if (cc.reasonlen > 0)
          reason += ": " + std::string(reinterpret_cast<const char*>(cc.reason), cc.reasonlen);
        return connect_failed(got_packet_ ? ErrorKind::kTls : ErrorKind::kConnect, reason);
      }
      return close_connection(liberr == NGTCP2_ERR_IDLE_CLOSE ? ErrorKind::kTimeout : ErrorKind::kRead,
                              false);
    }
    case NGTCP2_ERR_CRYPTO:
    case NGTCP2_ERR_HANDSHAKE_TIMEOUT:
      if (state_ == State::kConnecting) {
        std::string reason = liberr == NGTCP2_ERR_HANDSHAKE_TIMEOUT
                                 ? "QUIC handshake timed out"
                                 : QuicTlsClient::failure(tls_, ngtcp2_conn_get_tls_alert(conn_));
        return connect_failed(ErrorKind::kTls, reason);
      }
      return close_connection(ErrorKind::kBadResponse);
    default:
      if (state_ == State::kConnecting)
        return connect_failed(ErrorKind::kTls, std::string("QUIC: ") + ngtcp2_strerror(liberr));
      return close_connection(ErrorKind::kBadResponse);
  }
}

// The handshake failed (or timed out, or a stop cut it): the requests waiting for it fail.
void H3Connection::connect_failed(ErrorKind kind, const std::string& reason) {
  const bool record = !stopped_ && !worker_.stopping();
  if (record) {
    if (kind == ErrorKind::kTls)
      worker_.note_tls_failure(reason);
    else if (first_connect_)
      worker_.note_first_connect_failure(reason);
  }
  first_connect_ = false;
  auto now = Clock::now();
  for (Slot& s : slots_) {  // queued, and open in 0-RTT
    if (s.state == Slot::State::kFree) continue;
    if (record) worker_.record_failure(s.measured, s.origin, now, kind, cost_);
    slots_.release(s);
  }
  slots_.queued.clear();
  preconnect_ = false;  // no request was waiting: connect again when the first slot comes
  close_connection(std::nullopt, got_packet_);
}

void H3Connection::close_connection(std::optional<ErrorKind> kind, bool close) {
  if (state_ != State::kOpen && state_ != State::kConnecting) return;
  drop_open(kind);
  if (close && conn_ && !ngtcp2_conn_is_in_closing_period(conn_) &&
      !ngtcp2_conn_is_in_draining_period(conn_)) {
    // Tell the server at once rather than leave it to its idle timeout; sent once, never
    // repeated (the socket closes now): a lost one only costs the server that timeout.
    ngtcp2_connection_close_error cc;
    ngtcp2_connection_close_error_set_application_error(&cc, NGHTTP3_H3_NO_ERROR, nullptr, 0);
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n =
        ngtcp2_conn_write_connection_close(conn_, &path_.path, &pi, out_.data(), out_.size(), &cc, now_ts());
    if (n > 0) (void)::send(socket_.native_handle(), out_.data(), static_cast<std::size_t>(n), 0);
  }
  free_quic();
  packet_size_ = 0;
  state_ = State::kClosing;
  error_code ignored;
  socket_.close(ignored);  // the pending waits complete with operation_aborted
  armed_.reset();
  timer_.cancel();
  maybe_closed();
}

// The next connection waits until the old one's waits have completed.
// Posted, not called: a connection that fails at once (no socket) would otherwise recurse
// through pump and do_connect.
void H3Connection::maybe_closed() {
  if (state_ != State::kClosing || reading_ || write_waiting_ || timer_waits_ > 0) return;
  state_ = State::kIdle;
  asio::post(worker_.io(), [this] { pump(); });
}

void H3Connection::free_quic() {
  if (h3_) {
    nghttp3_conn_del(h3_);
    h3_ = nullptr;
  }
  if (conn_) {
    ngtcp2_conn_del(conn_);
    conn_ = nullptr;
  }
  if (tls_) {
    gnutls_deinit(tls_);
    tls_ = nullptr;
  }
}

void H3Connection::close_io() {
  error_code ignored;
  socket_.close(ignored);
}

}  // namespace loadlab::load
