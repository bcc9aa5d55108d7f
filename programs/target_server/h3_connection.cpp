#include "h3_connection.hpp"

#include <nghttp3/nghttp3.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <charconv>
#include <cstring>
#include <string_view>

#include "canned_responses.hpp"
#include "h3_server.hpp"
#include "loadlab/quic/packets.hpp"
#include "loadlab/shared/limits.hpp"
#include "request_parser.hpp"

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;

namespace {

// Receive windows, as H2Session's: request bodies are discarded as they arrive.
constexpr std::uint64_t kStreamWindow = 1 << 20;
constexpr std::uint64_t kConnectionWindow = 16 << 20;
// HTTP/3 needs three unidirectional streams from the client (control, QPACK encoder and
// decoder); a few more for extensions it may open and we ignore.
constexpr std::uint64_t kMaxUniStreams = 8;
// Packets written per flush before the rest is posted, so one connection's large response does
// not hold up the socket's other connections.
constexpr int kMaxPacketsPerFlush = 64;
// CONNECTION_CLOSE is repeated at most this often in the closing period (RFC 9000 §10.2.1).
constexpr unsigned kMaxCloseRepeats = 8;

using quic::timestamp;

ngtcp2_duration nanoseconds(std::chrono::steady_clock::duration d) {
  return static_cast<ngtcp2_duration>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

std::string_view view(nghttp3_rcbuf* buffer) {
  const auto v = nghttp3_rcbuf_get_buf(buffer);
  return {reinterpret_cast<const char*>(v.base), v.len};
}

ngtcp2_path path_of(H3Connection::udp::endpoint& local, H3Connection::udp::endpoint& remote) {
  return {{local.data(), static_cast<ngtcp2_socklen>(local.size())},
          {remote.data(), static_cast<ngtcp2_socklen>(remote.size())},
          nullptr};
}

}  // namespace

// --- ngtcp2's and nghttp3's callbacks: translate, then call the connection -----------------

struct H3Connection::Glue {
  static H3Connection& self(void* user_data) { return *static_cast<H3Connection*>(user_data); }

  static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) { return self(ref->user_data).conn_; }

  static int get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token, std::size_t size,
                                   void* user_data) {
    auto& c = self(user_data);
    quic::random_bytes(cid->data, size);
    cid->datalen = size;
    const auto& secret = c.server_.static_secret();
    if (ngtcp2_crypto_generate_stateless_reset_token(token, secret.data(), secret.size(), cid) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    c.server_.associate(*cid, c.shared_from_this());
    return 0;
  }

  static int remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* user_data) {
    self(user_data).server_.dissociate(*cid);
    return 0;
  }

  static int handshake_completed(ngtcp2_conn*, void* user_data) {
    self(user_data).on_handshake_completed();
    return 0;
  }

  // The 1-RTT key is installed once the ClientHello is read, before any 0-RTT stream data is
  // decrypted: HTTP/3 is set up here, so early requests find it.
  static int recv_tx_key(ngtcp2_conn*, ngtcp2_crypto_level level, void* user_data) {
    if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION) return 0;
    return self(user_data).setup_http() ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
  }

  static int fail_http(H3Connection& c, nghttp3_ssize rv) {
    c.env_.log->debug("h3: {}", nghttp3_strerror(static_cast<int>(rv)));
    ngtcp2_connection_close_error_set_application_error(
        &c.last_error_, nghttp3_err_infer_quic_app_error_code(static_cast<int>(rv)), nullptr, 0);
    c.error_set_ = true;
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }

  static int recv_stream_data(ngtcp2_conn*, std::uint32_t flags, std::int64_t stream_id, std::uint64_t,
                              const std::uint8_t* data, std::size_t size, void* user_data, void*) {
    auto& c = self(user_data);
    if (c.http_ == nullptr) return NGTCP2_ERR_CALLBACK_FAILURE;
    const auto n =
        nghttp3_conn_read_stream(c.http_, stream_id, data, size, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
    if (n < 0) return fail_http(c, n);
    c.consume(stream_id, static_cast<std::size_t>(n));
    return 0;
  }

  static int acked_stream_data_offset(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, std::uint64_t size,
                                      void* user_data, void*) {
    auto& c = self(user_data);
    if (c.http_ == nullptr) return 0;
    if (int rv = nghttp3_conn_add_ack_offset(c.http_, stream_id, size); rv != 0) return fail_http(c, rv);
    return 0;
  }

  static int stream_close(ngtcp2_conn*, std::uint32_t flags, std::int64_t stream_id,
                          std::uint64_t app_error_code, void* user_data, void*) {
    auto& c = self(user_data);
    if (c.http_ == nullptr) return 0;
    if ((flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET) == 0) app_error_code = NGHTTP3_H3_NO_ERROR;
    const int rv = nghttp3_conn_close_stream(c.http_, stream_id, app_error_code);
    if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fail_http(c, rv);
    return 0;
  }

  // The client reset its request stream or asked us to stop sending: nghttp3 stops reading.
  static int stream_reset(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, std::uint64_t, void* user_data,
                          void*) {
    auto& c = self(user_data);
    if (c.http_ == nullptr) return 0;
    if (int rv = nghttp3_conn_shutdown_stream_read(c.http_, stream_id); rv != 0) return fail_http(c, rv);
    return 0;
  }

  static int stream_stop_sending(ngtcp2_conn* conn, std::int64_t stream_id, std::uint64_t code,
                                 void* user_data, void* stream_user_data) {
    return stream_reset(conn, stream_id, 0, code, user_data, stream_user_data);
  }

  static int extend_max_remote_streams_bidi(ngtcp2_conn*, std::uint64_t max_streams, void* user_data) {
    auto& c = self(user_data);
    if (c.http_ != nullptr) nghttp3_conn_set_max_client_streams_bidi(c.http_, max_streams);
    return 0;
  }

  static int extend_max_stream_data(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, void* user_data,
                                    void*) {
    auto& c = self(user_data);
    if (c.http_ == nullptr) return 0;
    if (int rv = nghttp3_conn_unblock_stream(c.http_, stream_id); rv != 0) return fail_http(c, rv);
    return 0;
  }

  // nghttp3's.

  static int http_stream_close(nghttp3_conn*, std::int64_t stream_id, std::uint64_t, void* conn_user_data,
                               void* stream_user_data) {
    auto& c = self(conn_user_data);
    if (auto* s = static_cast<RequestStream*>(stream_user_data)) c.end_stream(*s);
    // A request stream is done: the client may open another.
    if (c.conn_ != nullptr && ngtcp2_is_bidi_stream(stream_id))
      ngtcp2_conn_extend_max_streams_bidi(c.conn_, 1);
    return 0;
  }

  static int http_recv_data(nghttp3_conn*, std::int64_t stream_id, const std::uint8_t*, std::size_t size,
                            void* conn_user_data, void* stream_user_data) {
    auto& c = self(conn_user_data);
    c.consume(stream_id, size);  // discarded as it arrives
    auto* s = static_cast<RequestStream*>(stream_user_data);
    if (s != nullptr && s->state == RequestStream::State::receiving) c.responder_.take_body(*s, size);
    return 0;
  }

  static int http_deferred_consume(nghttp3_conn*, std::int64_t stream_id, std::size_t consumed,
                                   void* conn_user_data, void*) {
    self(conn_user_data).consume(stream_id, consumed);
    return 0;
  }

  static int http_begin_headers(nghttp3_conn*, std::int64_t stream_id, void* conn_user_data,
                                void* stream_user_data) {
    if (stream_user_data == nullptr) self(conn_user_data).begin_stream(stream_id);
    return 0;
  }

  static int http_recv_header(nghttp3_conn*, std::int64_t, std::int32_t, nghttp3_rcbuf* name,
                              nghttp3_rcbuf* value, std::uint8_t, void* conn_user_data,
                              void* stream_user_data) {
    auto& c = self(conn_user_data);
    auto* s = static_cast<RequestStream*>(stream_user_data);
    if (s != nullptr && s->state == RequestStream::State::receiving)
      c.responder_.take_header(*s, view(name), view(value), false);  // trailers come to recv_trailer
    return 0;
  }

  static int http_end_stream(nghttp3_conn*, std::int64_t, void* conn_user_data, void* stream_user_data) {
    auto* s = static_cast<RequestStream*>(stream_user_data);
    if (s != nullptr && s->state == RequestStream::State::receiving)
      self(conn_user_data).responder_.complete_request(*s);
    return 0;
  }

  static int http_stop_sending(nghttp3_conn*, std::int64_t stream_id, std::uint64_t app_error_code,
                               void* conn_user_data, void*) {
    self(conn_user_data).shut_stream(stream_id, app_error_code, true, false);
    return 0;
  }

  static int http_reset_stream(nghttp3_conn*, std::int64_t stream_id, std::uint64_t app_error_code,
                               void* conn_user_data, void*) {
    self(conn_user_data).shut_stream(stream_id, app_error_code, false, true);
    return 0;
  }

  // nghttp3 keeps pointers to the body until the client acknowledges it: the configured body
  // and filler outlive the connection, a per-request text lives in the slot until the stream
  // closes. Filler is the same byte everywhere: any run of it is a prefix of the block.
  static nghttp3_ssize read_body(nghttp3_conn*, std::int64_t, nghttp3_vec* vec, std::size_t count,
                                 std::uint32_t* flags, void*, void* stream_user_data) {
    auto& s = *static_cast<RequestStream*>(stream_user_data);
    const std::uint64_t total = s.content.length.value_or(0);
    std::size_t i = 0;
    for (; i < count && s.read < total; ++i) {
      const std::uint64_t left = total - s.read;
      const auto n =
          static_cast<std::size_t>(s.content.filler ? std::min<std::uint64_t>(left, Filler::kBlock) : left);
      const char* at = s.content.filler ? Filler::block().data() : s.content.bytes.data() + s.read;
      vec[i].base = reinterpret_cast<std::uint8_t*>(const_cast<char*>(at));
      vec[i].len = n;
      s.read += n;
    }
    if (s.read == total) *flags |= NGHTTP3_DATA_FLAG_EOF;
    return static_cast<nghttp3_ssize>(i);
  }
};

// --- set-up ------------------------------------------------------------------------------

H3Connection::H3Connection(H3Server& server, const SessionEnv& env, IoWorker& worker)
    : server_(server),
      env_(env),
      worker_(worker),
      random_(random_seed(this)),
      expiry_timer_(worker.ioc),
      watchdog_(worker.ioc),
      responder_(*this, env, worker, worker.h3_streams, random_) {
  ngtcp2_connection_close_error_default(&last_error_);
}

H3Connection::~H3Connection() {
  if (http_ != nullptr) nghttp3_conn_del(http_);
  if (conn_ != nullptr) ngtcp2_conn_del(conn_);
  if (tls_ != nullptr) gnutls_deinit(tls_);
}

ngtcp2_callbacks H3Connection::quic_callbacks() {
  ngtcp2_callbacks callbacks = quic::crypto_callbacks(quic::Role::server);
  callbacks.handshake_completed = Glue::handshake_completed;
  callbacks.recv_stream_data = Glue::recv_stream_data;
  callbacks.acked_stream_data_offset = Glue::acked_stream_data_offset;
  callbacks.stream_close = Glue::stream_close;
  callbacks.stream_reset = Glue::stream_reset;
  callbacks.stream_stop_sending = Glue::stream_stop_sending;
  callbacks.extend_max_remote_streams_bidi = Glue::extend_max_remote_streams_bidi;
  callbacks.extend_max_stream_data = Glue::extend_max_stream_data;
  callbacks.get_new_connection_id = Glue::get_new_connection_id;
  callbacks.remove_connection_id = Glue::remove_connection_id;
  callbacks.recv_tx_key = Glue::recv_tx_key;
  return callbacks;
}

bool H3Connection::start(const ngtcp2_pkt_hd& initial, const ngtcp2_cid& scid, const QuicTlsContext& tls,
                         const udp::endpoint& local, const udp::endpoint& remote, const std::uint8_t* data,
                         std::size_t size, const ngtcp2_cid* odcid) {
  local_ = local;
  remote_ = remote;
  const ngtcp2_callbacks callbacks = quic_callbacks();

  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = timestamp();
  settings.handshake_timeout = nanoseconds(env_.read_timeout);  // a slow handshake is a slow request

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = kStreamWindow;
  params.initial_max_stream_data_bidi_remote = kStreamWindow;
  params.initial_max_stream_data_uni = kStreamWindow;
  params.initial_max_data = kConnectionWindow;
  params.initial_max_streams_bidi = limits::kMaxStreams;
  params.initial_max_streams_uni = kMaxUniStreams;
  params.max_idle_timeout = nanoseconds(env_.idle_timeout);
  params.original_dcid = initial.dcid;
  if (odcid != nullptr) {  // the client came back with our Retry token (RFC 9000 §7.3)
    params.original_dcid = *odcid;
    params.retry_scid = initial.dcid;
    params.retry_scid_present = 1;
    settings.token = initial.token;
  }
  params.stateless_reset_token_present = 1;
  const auto& secret = server_.static_secret();
  if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, secret.data(), secret.size(),
                                                   &scid) != 0) {
    close_now();
    return false;
  }

  auto path = path_of(local_, remote_);
  if (int rv = ngtcp2_conn_server_new(&conn_, &initial.scid, &scid, &path, initial.version, &callbacks,
                                      &settings, &params, nullptr, this);
      rv != 0) {
    env_.log->debug("h3: ngtcp2_conn_server_new: {}", ngtcp2_strerror(rv));
    close_now();
    return false;
  }
  conn_ref_.get_conn = Glue::get_conn;
  conn_ref_.user_data = this;
  tls_ = tls.new_session(&conn_ref_);
  if (tls_ == nullptr) {
    env_.log->warn("h3: cannot make a TLS session");
    close_now();
    return false;
  }
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  on_datagram(remote, data, size);
  return !closed_;
}

bool H3Connection::setup_http() {
  if (http_ != nullptr) return true;
  if (!make_http(ngtcp2_conn_get_local_transport_params(conn_)->initial_max_streams_bidi)) return false;
  std::int64_t control = -1, encoder = -1, decoder = -1;
  if (ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) != 0) return false;
  if (nghttp3_conn_bind_control_stream(http_, control) != 0) return false;
  if (ngtcp2_conn_open_uni_stream(conn_, &encoder, nullptr) != 0) return false;
  if (ngtcp2_conn_open_uni_stream(conn_, &decoder, nullptr) != 0) return false;
  return nghttp3_conn_bind_qpack_streams(http_, encoder, decoder) == 0;
}

bool H3Connection::make_http(std::uint64_t max_streams) {
  nghttp3_callbacks callbacks{};
  callbacks.stream_close = Glue::http_stream_close;
  callbacks.recv_data = Glue::http_recv_data;
  callbacks.deferred_consume = Glue::http_deferred_consume;
  callbacks.begin_headers = Glue::http_begin_headers;
  callbacks.recv_header = Glue::http_recv_header;
  callbacks.end_stream = Glue::http_end_stream;
  callbacks.stop_sending = Glue::http_stop_sending;
  callbacks.reset_stream = Glue::http_reset_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  if (nghttp3_conn_server_new(&http_, &callbacks, &settings, nullptr, this) != 0) return false;
  nghttp3_conn_set_max_client_streams_bidi(http_, max_streams);
  // The QPACK decoder queues a Section Acknowledgement per request that used the dynamic table
  // until the next flush; it fails the connection (ERR_QPACK_FATAL) once that queue outgrows
  // what it thinks the client's streams need: 100 streams' worth unless told how many may be
  // open at once (a batch of datagrams carries the requests of up to MAX_STREAMS streams).
  nghttp3_conn_set_max_concurrent_streams(http_, static_cast<std::size_t>(max_streams));
  return true;
}

void H3Connection::on_handshake_completed() {
  handshake_done_ = true;
  server_.handshake_done(*this);
  constexpr auto relaxed = std::memory_order_relaxed;
  worker_.connections.fetch_add(1, relaxed);
  worker_.h3_connections.fetch_add(1, relaxed);
  if (gnutls_session_is_resumed(tls_) != 0) worker_.h3_resumed.fetch_add(1, relaxed);
  tls_early_data_ = (gnutls_session_get_flags(tls_) & GNUTLS_SFLAGS_EARLY_DATA) != 0;
  count_early_data();
  // A ticket for the next connection's resumption (and 0-RTT).
  if (int rv = gnutls_session_ticket_send(tls_, 1, 0); rv != 0)
    env_.log->debug("h3: gnutls_session_ticket_send: {}", gnutls_strerror(rv));
}

// A connection counts in h3_early_data when TLS accepted 0-RTT and 0-RTT packets came: a
// client may offer early data on resumption and send none (gtlsclient --disable-early-data).
// NGTCP2_STREAM_DATA_FLAG_EARLY does not tell: ngtcp2 sets it for any stream data before the
// handshake completes, 1-RTT data sent with the client's Finished included.
void H3Connection::note_0rtt(const std::uint8_t* data, std::size_t size) {
  // The datagram's coalesced long-header packets (RFC 9000 §12.2), each skipped by its length.
  while (size > 0 && (data[0] & 0x80) != 0) {
    ngtcp2_pkt_hd hd;
    const auto header = ngtcp2_pkt_decode_hd_long(&hd, data, size);
    if (header < 0) return;
    if (hd.type == NGTCP2_PKT_0RTT) {
      saw_0rtt_ = true;
      return count_early_data();
    }
    const auto packet = static_cast<std::size_t>(header) + hd.len;
    if (hd.len == 0 || packet > size) return;  // Version Negotiation, Retry, or cut short
    data += packet;
    size -= packet;
  }
}

void H3Connection::count_early_data() {
  if (early_counted_ || !handshake_done_ || !tls_early_data_ || !saw_0rtt_) return;
  early_counted_ = true;
  worker_.h3_early_data.fetch_add(1, std::memory_order_relaxed);
}

// --- reading -----------------------------------------------------------------------------

void H3Connection::on_datagram(const udp::endpoint& remote, const std::uint8_t* data, std::size_t size) {
  if (closed_ || draining_) return;
  if (closing_) {
    // The client did not get our CONNECTION_CLOSE yet.
    if (close_repeats_++ < kMaxCloseRepeats)
      server_.send(remote, reinterpret_cast<const std::uint8_t*>(close_packet_.data()), close_packet_.size());
    return;
  }
  if (!handshake_done_ && !saw_0rtt_) note_0rtt(data, size);
  udp::endpoint from = remote;
  auto path = path_of(local_, from);
  ngtcp2_pkt_info info{};
  read_at_ = Clock::now();
  const int rv = ngtcp2_conn_read_pkt(conn_, &path, &info, data, size, timestamp(read_at_));
  if (rv != 0) on_read_error(rv);
}

void H3Connection::on_read_error(int rv) {
  switch (rv) {
    case NGTCP2_ERR_DRAINING:  // the client closed
      return start_draining();
    case NGTCP2_ERR_RETRY:
    case NGTCP2_ERR_DROP_CONN:
      return close_now();
    case NGTCP2_ERR_CRYPTO:
      if (!error_set_) {
        ngtcp2_connection_close_error_set_transport_error_tls_alert(
            &last_error_, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
      }
      break;
    default:
      if (!error_set_) ngtcp2_connection_close_error_set_transport_error_liberr(&last_error_, rv, nullptr, 0);
      break;
  }
  error_set_ = true;
  env_.log->debug("h3: {}: closing", ngtcp2_strerror(rv));
  start_closing();
}

void H3Connection::consume(std::int64_t stream_id, std::size_t bytes) {
  if (bytes == 0 || conn_ == nullptr) return;  // detached: no QUIC flow control to credit
  ngtcp2_conn_extend_max_stream_offset(conn_, stream_id, bytes);
  ngtcp2_conn_extend_max_offset(conn_, bytes);
}

// --- writing -----------------------------------------------------------------------------

void H3Connection::flush() {
  if (closed_ || closing_ || draining_ || conn_ == nullptr) return;
  if (shutting_down_ && !goaway_sent_ && streams_.empty() && http_ != nullptr) {
    nghttp3_conn_shutdown(http_);  // the final GOAWAY: no stream is left to answer
    goaway_sent_ = true;
  }
  // Each packet goes to the server's socket, and the responses it ends count once it has.
  struct Sink final : quic::PacketSink {
    H3Connection& c;
    explicit Sink(H3Connection& c) : c(c) {}
    bool stream_written(std::int64_t stream_id, bool fin_sent) override {
      c.stream_written(stream_id, fin_sent);
      return true;
    }
    bool send(const ngtcp2_path& path, const std::uint8_t* data, std::size_t size) override {
      c.send(path, data, size);
      c.credit_answered();
      return true;
    }
  } sink(*this);
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  const auto result =
      quic::write_packets(conn_, http_, packet_, &ps.path, timestamp(), kMaxPacketsPerFlush, sink);
  credit_answered();
  if (result.end == quic::WriteResult::End::http_failed) return http_write_failed(result.error);
  if (result.end == quic::WriteResult::End::quic_failed) {
    if (!error_set_) {
      ngtcp2_connection_close_error_set_transport_error_liberr(&last_error_, result.error, nullptr, 0);
      error_set_ = true;
    }
    return start_closing();
  }
  if (result.end == quic::WriteResult::End::more && !flush_posted_) {
    flush_posted_ = true;
    net::post(worker_.ioc, [self = shared_from_this()] {
      self->flush_posted_ = false;
      self->flush();
    });
  }
  if (goaway_sent_) {
    // All answered and the GOAWAY written: CONNECTION_CLOSE says the rest.
    ngtcp2_connection_close_error_set_application_error(&last_error_, NGHTTP3_H3_NO_ERROR, nullptr, 0);
    error_set_ = true;
    return start_closing();
  }
  arm_expiry();
}

// Bytes of the stream went into a packet; `fin_sent`: its last byte with them.
void H3Connection::stream_written(std::int64_t stream_id, bool fin_sent) {
  if (fin_sent) {
    if (RequestStream* s = stream(stream_id)) answered(*s);
  }
}

void H3Connection::http_write_failed(int rv) {
  Glue::fail_http(*this, rv);
  start_closing();
}

void H3Connection::send(const ngtcp2_path& path, const std::uint8_t* data, std::size_t size) {
  if (path.remote.addrlen == remote_.size() &&
      std::memcmp(path.remote.addr, remote_.data(), remote_.size()) == 0)
    return server_.send(remote_, data, size);
  udp::endpoint to;  // the client moved (ngtcp2 validates the new path)
  std::memcpy(to.data(), path.remote.addr, path.remote.addrlen);
  to.resize(path.remote.addrlen);
  server_.send(to, data, size);
}

void H3Connection::credit_answered() { responder_.credit(responder_.take_answered()); }

// --- closing -----------------------------------------------------------------------------

void H3Connection::initiate_shutdown() {
  if (closed_ || closing_ || draining_ || shutting_down_) return;
  shutting_down_ = true;
  if (http_ == nullptr) {  // still in the handshake: nothing to answer
    ngtcp2_connection_close_error_set_application_error(&last_error_, NGHTTP3_H3_NO_ERROR, nullptr, 0);
    error_set_ = true;
    return start_closing();
  }
  // No new requests, please (GOAWAY with the largest id); those open are answered first.
  nghttp3_conn_submit_shutdown_notice(http_);
  flush();
}

void H3Connection::start_closing() {
  if (closed_ || closing_ || draining_) return;
  if (!handshake_done_ && http_ == nullptr && !error_set_) return close_now();
  if (conn_ == nullptr) return close_now();  // detached: no QUIC connection to close
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> packet;
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info info{};
  const auto n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &info, packet.data(), packet.size(),
                                                    &last_error_, timestamp());
  if (n <= 0) return close_now();
  closing_ = true;
  close_packet_.assign(reinterpret_cast<const char*>(packet.data()), static_cast<std::size_t>(n));
  send(ps.path, packet.data(), static_cast<std::size_t>(n));
  server_.retire();  // after the send: the last connection's retiring closes a stopping socket
  wait_then_close();
}

void H3Connection::start_draining() {
  if (closed_ || closing_ || draining_) return;
  draining_ = true;
  server_.retire();
  wait_then_close();
}

// The connection says nothing more: requests read and not answered leave env.in_flight now, so
// a shutdown does not wait for the closing period.
void H3Connection::abandon_requests() { responder_.abandon(); }

// The closing or draining period: three PTOs (RFC 9000 §10.2), then the ids are forgotten.
void H3Connection::wait_then_close() {
  abandon_requests();
  responder_.stop();
  watchdog_.cancel();
  expiry_at_ = timer_at_ = Clock::time_point::max();
  expiry_timer_.expires_after(std::chrono::nanoseconds(3 * ngtcp2_conn_get_pto(conn_)));
  expiry_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->close_now();
  });
}

void H3Connection::close_now() {
  if (closed_) return;
  if (!closing_ && !draining_) server_.retire();
  closed_ = true;
  closing_ = draining_ = false;
  abandon_requests();
  expiry_timer_.cancel();
  responder_.stop();
  watchdog_.cancel();
  server_.remove(*this);  // may drop the last reference but the caller's
}

// After every flush. Most packets move QUIC's timers later (an ACK pushes the loss and idle
// timers back): then the pending wait is left as it is, and wakes early to wait again for the
// new expiry (on_expiry), rather than re-programming the kernel's timer for every packet. Only
// an earlier expiry moves the wait.
void H3Connection::arm_expiry() {
  if (closed_ || closing_ || draining_) return;
  const auto expiry = ngtcp2_conn_get_expiry(conn_);
  expiry_at_ = expiry == UINT64_MAX ? Clock::time_point::max() : quic::time_point(expiry);
  if (timer_at_ <= expiry_at_) return;
  wait_for_expiry();
}

void H3Connection::wait_for_expiry() {
  timer_at_ = expiry_at_;
  expiry_timer_.expires_at(timer_at_);  // cancels a later wait, whose handler sees operation_aborted
  expiry_timer_.async_wait([self = shared_from_this()](beast::error_code ec) { self->on_expiry(ec); });
}

void H3Connection::on_expiry(beast::error_code ec) {
  if (ec || closed_ || closing_ || draining_) return;
  timer_at_ = Clock::time_point::max();
  if (expiry_at_ == Clock::time_point::max()) return;       // no timer runs any more
  if (Clock::now() < expiry_at_) return wait_for_expiry();  // moved later since the wait began
  expiry_at_ = Clock::time_point::max();
  const int rv = ngtcp2_conn_handle_expiry(conn_, timestamp());
  if (rv == NGTCP2_ERR_IDLE_CLOSE || rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
    env_.log->debug("h3: {}: closing", ngtcp2_strerror(rv));
    return close_now();  // silently (RFC 9000 §10.1)
  }
  if (rv != 0) return on_read_error(rv);
  flush();
}

// --- streams -----------------------------------------------------------------------------

RequestStream* H3Connection::stream(std::int64_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second;
}

void H3Connection::begin_stream(std::int64_t id) {
  RequestStream& s = responder_.begin(id, read_at_);
  streams_[id] = &s;
  nghttp3_conn_set_stream_user_data(http_, id, &s);
  if (watchdog_at_ == Clock::time_point::max()) arm_watchdog(s.started + env_.read_timeout);
}

void H3Connection::submit_response(RequestStream& s, const ResponseHead& head) {
  const ResponseFields<nghttp3_nv, NGHTTP3_NV_FLAG_NO_COPY_NAME, NGHTTP3_NV_FLAG_NO_COPY_VALUE> headers(s,
                                                                                                        head);
  nghttp3_data_reader reader{Glue::read_body};
  const int rv = nghttp3_conn_submit_response(http_, s.id, headers.data(), headers.size(),
                                              head.body ? &reader : nullptr);
  if (rv != 0) env_.log->debug("h3: response to stream {}: {}", s.id, nghttp3_strerror(rv));
}

// The stream's FIN is in a packet about to be sent: its response counts once it is.
void H3Connection::answered(RequestStream& s) {
  if (responder_.answered(s)) {
    // The client may still be sending its body: refuse the rest (RFC 9114 §4.1).
    shut_stream(s.id, NGHTTP3_H3_NO_ERROR, true, false);
  }
}

void H3Connection::shut_stream(std::int64_t id, std::uint64_t code, bool read, bool write) {
  if (conn_ == nullptr) return detached_shuts_.push_back({id, code, read, write});
  if (read && write) {
    ngtcp2_conn_shutdown_stream(conn_, id, code);
  } else if (read) {
    ngtcp2_conn_shutdown_stream_read(conn_, id, code);
  } else {
    ngtcp2_conn_shutdown_stream_write(conn_, id, code);
  }
}

void H3Connection::end_stream(RequestStream& s) {
  streams_.erase(s.id);
  responder_.end(s);
}

// --- the watchdog --------------------------------------------------------------------------

// Armed for the oldest incomplete request. A stream beginning while a wait is pending is newer
// than the one waited for: the wake finds it later. A request completed meanwhile leaves the
// wait as it is, and the wake finds nothing due.
void H3Connection::arm_watchdog(Clock::time_point at) {
  watchdog_at_ = at;
  watchdog_.expires_at(at);
  watchdog_.async_wait([self = shared_from_this()](beast::error_code ec) { self->on_watchdog(ec); });
}

void H3Connection::on_watchdog(beast::error_code ec) {
  if (ec || closed_ || closing_ || draining_) return;
  watchdog_at_ = Clock::time_point::max();
  const auto now = Clock::now();
  bool reset = false;
  responder_.for_each_open([&](RequestStream& s) {
    if (s.state != RequestStream::State::receiving || s.started + env_.read_timeout > now) return;
    env_.log->debug("h3 timeout: resetting stream {}", s.id);
    responder_.set_state(s, RequestStream::State::responding);  // never answered
    shut_stream(s.id, NGHTTP3_H3_REQUEST_INCOMPLETE, true, true);
    reset = true;
  });
  // Of the requests still incomplete (a scan per wake).
  const auto oldest = responder_.oldest_receiving();
  if (oldest != Clock::time_point::max()) arm_watchdog(oldest + env_.read_timeout);
  if (reset) flush();
}

}  // namespace loadlab::target
