#pragma once
// A small HTTP/3 client for the target's tests: one QUIC connection (ngtcp2 and GnuTLS, no
// certificate check) to 127.0.0.1, requests with any headers (the x-loadlab-* knobs that
// gtlsclient cannot send), a request left open without its end (read timeouts), each stream's
// status, headers, body, reset code and the time it ended. Blocking, on the test's thread; every
// run is bounded by a deadline.
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loadlab/quic/packets.hpp"

namespace loadlab::target::testing {

class H3Client {
 public:
  using Clock = std::chrono::steady_clock;
  using Headers = std::vector<std::pair<std::string, std::string>>;

  struct Response {
    int status = 0;
    std::map<std::string, std::string> headers;
    std::string body;
    bool closed = false;
    std::uint64_t close_code = 0;  // NGHTTP3_H3_NO_ERROR when answered normally
    Clock::time_point closed_at;
  };

  // A client that sends its first Initial (a whole ClientHello, from a port of its own) and
  // nothing more: one packet of a flood of Initials.
  struct InitialOnly {};
  H3Client(std::uint16_t port, InitialOnly) {
    if (open_socket(port) && make_connection()) flush();
  }

  explicit H3Client(std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    if (!open_socket(port) || !make_connection()) return;
    flush();
    run_until([this] { return ngtcp2_conn_get_handshake_completed(conn_) != 0 && http_ != nullptr; },
              timeout);
  }

 private:
  bool open_socket(std::uint16_t port) {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    remote_.sin_family = AF_INET;
    remote_.sin_port = htons(port);
    remote_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&remote_), sizeof remote_) != 0) return false;
    socklen_t len = sizeof local_;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&local_), &len);
    return true;
  }

 public:
  ~H3Client() {
    close_connection();
    if (http_ != nullptr) nghttp3_conn_del(http_);
    if (conn_ != nullptr) ngtcp2_conn_del(conn_);
    if (tls_ != nullptr) gnutls_deinit(tls_);
    if (credentials_ != nullptr) gnutls_certificate_free_credentials(credentials_);
    if (fd_ >= 0) close(fd_);
  }
  H3Client(const H3Client&) = delete;
  H3Client& operator=(const H3Client&) = delete;

  bool connected() const { return http_ != nullptr && !failed_; }

  // A request; `open` leaves it without its end (a request never completed). Returns its id.
  std::int64_t submit(const Headers& extra = {}, const std::string& method = "GET",
                      const std::string& path = "/", std::uint64_t body_size = 0, bool open = false) {
    std::int64_t id = -1;
    if (!connected() || ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr) != 0) return -1;
    Headers all = {{":method", method}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", path}};
    all.insert(all.end(), extra.begin(), extra.end());
    std::vector<nghttp3_nv> nva;
    for (auto& [name, value] : all) {
      nva.push_back({reinterpret_cast<std::uint8_t*>(name.data()),
                     reinterpret_cast<std::uint8_t*>(value.data()), name.size(), value.size(),
                     NGHTTP3_NV_FLAG_NONE});
    }
    auto& upload = uploads_[id];
    upload.left = body_size;
    upload.open = open;
    nghttp3_data_reader reader{read_body};
    const bool has_body = body_size != 0 || open;
    nghttp3_conn_submit_request(http_, id, nva.data(), nva.size(), has_body ? &reader : nullptr, &upload);
    responses_[id];
    if (!holding_) flush();
    return id;
  }

  // `count` requests sent together: packets full of HEADERS frames, which one batch of the
  // server's reads completes at once.
  void submit_together(int count, const Headers& extra) {
    holding_ = true;
    for (int i = 0; i < count; ++i) submit(extra);
    holding_ = false;
    flush();
  }

  // Runs the connection until `done()` or `timeout`; false at the deadline or on failure.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!done()) {
      if (failed_ || Clock::now() >= deadline) return false;
      auto wait = deadline;
      const auto expiry = conn_ != nullptr ? ngtcp2_conn_get_expiry(conn_) : UINT64_MAX;
      if (expiry != UINT64_MAX) {
        wait = std::min(wait, quic::time_point(expiry));
      }
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait - Clock::now()).count();
      pollfd pfd{fd_, POLLIN, 0};
      if (poll(&pfd, 1, static_cast<int>(std::max<long long>(ms, 0))) > 0) {
        read_all();
      } else if (conn_ != nullptr && ngtcp2_conn_handle_expiry(conn_, now()) != 0) {
        failed_ = true;
        return false;
      }
      flush();
    }
    return true;
  }

  // Until every stream submitted has closed.
  bool run_all(std::chrono::milliseconds timeout) {
    return run_until(
        [this] {
          for (auto& [id, res] : responses_) {
            if (!res.closed) return false;
          }
          return true;
        },
        timeout);
  }

  std::map<std::int64_t, Response>& responses() { return responses_; }
  Response& response(std::int64_t id) { return responses_[id]; }
  // The server closed the connection (CONNECTION_CLOSE) or it failed.
  bool closed() const { return failed_ || draining_; }
  // The server's CONNECTION_CLOSE: an HTTP/3 (application) code, or nullopt (a transport error
  // or none came).
  std::optional<std::uint64_t> close_code() const { return close_code_; }

 private:
  // CONNECTION_CLOSE (H3_NO_ERROR), as a client leaving says: the server forgets the
  // connection at once instead of waiting for acknowledgments that will not come.
  void close_connection() {
    if (conn_ == nullptr || failed_ || draining_ || ngtcp2_conn_get_handshake_completed(conn_) == 0) return;
    ngtcp2_connection_close_error error;
    ngtcp2_connection_close_error_default(&error);
    ngtcp2_connection_close_error_set_application_error(&error, NGHTTP3_H3_NO_ERROR, nullptr, 0);
    std::array<std::uint8_t, 1500> packet;
    ngtcp2_pkt_info pi{};
    const auto n =
        ngtcp2_conn_write_connection_close(conn_, nullptr, &pi, packet.data(), packet.size(), &error, now());
    if (n > 0) send(fd_, packet.data(), static_cast<std::size_t>(n), 0);
  }

  bool holding_ = false;  // submit() leaves the sending to submit_together()

  struct Upload {
    std::uint64_t left = 0;
    bool open = false;
  };

  static ngtcp2_tstamp now() { return quic::timestamp(); }
  static H3Client& self(void* p) { return *static_cast<H3Client*>(p); }

  ngtcp2_path path() {
    return {{reinterpret_cast<sockaddr*>(&local_), sizeof local_},
            {reinterpret_cast<sockaddr*>(&remote_), sizeof remote_},
            nullptr};
  }

  bool make_connection() {
    ngtcp2_callbacks cb = quic::crypto_callbacks(quic::Role::client);
    cb.get_new_connection_id = quic::random_connection_id;
    cb.handshake_completed = [](ngtcp2_conn*, void* p) {
      return self(p).setup_http() ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
    };
    cb.recv_stream_data = [](ngtcp2_conn* conn, std::uint32_t flags, std::int64_t id, std::uint64_t,
                             const std::uint8_t* data, std::size_t n, void* p, void*) {
      auto& c = self(p);
      const auto consumed =
          nghttp3_conn_read_stream(c.http_, id, data, n, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
      if (consumed < 0) return NGTCP2_ERR_CALLBACK_FAILURE;
      ngtcp2_conn_extend_max_stream_offset(conn, id, static_cast<std::uint64_t>(consumed));
      ngtcp2_conn_extend_max_offset(conn, static_cast<std::uint64_t>(consumed));
      return 0;
    };
    cb.acked_stream_data_offset = [](ngtcp2_conn*, std::int64_t id, std::uint64_t, std::uint64_t n, void* p,
                                     void*) {
      return nghttp3_conn_add_ack_offset(self(p).http_, id, n) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
    };
    cb.stream_close = [](ngtcp2_conn*, std::uint32_t flags, std::int64_t id, std::uint64_t code, void* p,
                         void*) {
      auto& c = self(p);
      if ((flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET) == 0) code = NGHTTP3_H3_NO_ERROR;
      if (auto it = c.responses_.find(id); it != c.responses_.end()) it->second.close_code = code;
      if (c.http_ != nullptr) nghttp3_conn_close_stream(c.http_, id, code);
      return 0;
    };
    cb.stream_reset = [](ngtcp2_conn*, std::int64_t id, std::uint64_t, std::uint64_t, void* p, void*) {
      if (self(p).http_ != nullptr) nghttp3_conn_shutdown_stream_read(self(p).http_, id);
      return 0;
    };
    cb.extend_max_stream_data = [](ngtcp2_conn*, std::int64_t id, std::uint64_t, void* p, void*) {
      if (self(p).http_ != nullptr) nghttp3_conn_unblock_stream(self(p).http_, id);
      return 0;
    };
    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = now();
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_stream_data_bidi_local = 16 << 20;
    params.initial_max_stream_data_bidi_remote = 16 << 20;
    params.initial_max_stream_data_uni = 1 << 20;
    params.initial_max_data = 64 << 20;
    params.initial_max_streams_uni = 16;
    params.max_idle_timeout = 30'000'000'000ull;
    ngtcp2_cid dcid, scid;
    dcid.datalen = 18;
    scid.datalen = 17;
    quic::random_bytes(dcid.data, dcid.datalen);
    quic::random_bytes(scid.data, scid.datalen);
    auto p = path();
    if (ngtcp2_conn_client_new(&conn_, &dcid, &scid, &p, NGTCP2_PROTO_VER_V1, &cb, &settings, &params,
                               nullptr, this) != 0)
      return false;
    conn_ref_.get_conn = [](ngtcp2_crypto_conn_ref* ref) { return self(ref->user_data).conn_; };
    conn_ref_.user_data = this;
    if (gnutls_certificate_allocate_credentials(&credentials_) != 0) return false;
    if (gnutls_init(&tls_, GNUTLS_CLIENT | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA) != 0)
      return false;
    if (gnutls_priority_set_direct(tls_,
                                   "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:"
                                   "+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305",
                                   nullptr) != 0)
      return false;
    if (ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0) return false;
    gnutls_session_set_ptr(tls_, &conn_ref_);
    gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, credentials_);
    gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>("h3")), 2};
    gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY);
    gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, "localhost", 9);
    ngtcp2_conn_set_tls_native_handle(conn_, tls_);
    return true;
  }

  bool setup_http() {
    nghttp3_callbacks cb{};
    cb.recv_header = [](nghttp3_conn*, std::int64_t id, std::int32_t, nghttp3_rcbuf* name,
                        nghttp3_rcbuf* value, std::uint8_t, void* p, void*) {
      const auto n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
      std::string key(reinterpret_cast<const char*>(n.base), n.len);
      std::string text(reinterpret_cast<const char*>(v.base), v.len);
      auto& res = self(p).responses_[id];
      if (key == ":status") res.status = std::stoi(text);
      res.headers[key] = text;
      return 0;
    };
    cb.recv_data = [](nghttp3_conn*, std::int64_t id, const std::uint8_t* data, std::size_t n, void* p,
                      void*) {
      auto& c = self(p);
      c.responses_[id].body.append(reinterpret_cast<const char*>(data), n);
      ngtcp2_conn_extend_max_stream_offset(c.conn_, id, n);
      ngtcp2_conn_extend_max_offset(c.conn_, n);
      return 0;
    };
    cb.deferred_consume = [](nghttp3_conn*, std::int64_t id, std::size_t n, void* p, void*) {
      ngtcp2_conn_extend_max_stream_offset(self(p).conn_, id, n);
      ngtcp2_conn_extend_max_offset(self(p).conn_, n);
      return 0;
    };
    cb.stream_close = [](nghttp3_conn*, std::int64_t id, std::uint64_t, void* p, void*) {
      auto& res = self(p).responses_[id];
      res.closed = true;
      res.closed_at = Clock::now();
      return 0;
    };
    cb.stop_sending = [](nghttp3_conn*, std::int64_t id, std::uint64_t code, void* p, void*) {
      ngtcp2_conn_shutdown_stream_read(self(p).conn_, id, code);
      return 0;
    };
    cb.reset_stream = [](nghttp3_conn*, std::int64_t id, std::uint64_t code, void* p, void*) {
      ngtcp2_conn_shutdown_stream_write(self(p).conn_, id, code);
      return 0;
    };
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    if (nghttp3_conn_client_new(&http_, &cb, &settings, nullptr, this) != 0) return false;
    std::int64_t control, encoder, decoder;
    if (ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) != 0 ||
        nghttp3_conn_bind_control_stream(http_, control) != 0 ||
        ngtcp2_conn_open_uni_stream(conn_, &encoder, nullptr) != 0 ||
        ngtcp2_conn_open_uni_stream(conn_, &decoder, nullptr) != 0 ||
        nghttp3_conn_bind_qpack_streams(http_, encoder, decoder) != 0)
      return false;
    return true;
  }

  static nghttp3_ssize read_body(nghttp3_conn*, std::int64_t, nghttp3_vec* vec, std::size_t count,
                                 std::uint32_t* flags, void*, void* stream_user_data) {
    static const std::string block(16384, 'u');
    auto& upload = *static_cast<Upload*>(stream_user_data);
    if (upload.left == 0) {
      if (upload.open) return NGHTTP3_ERR_WOULDBLOCK;
      *flags |= NGHTTP3_DATA_FLAG_EOF;
      return 0;
    }
    const auto n = std::min<std::uint64_t>(upload.left, block.size());
    vec[0].base = reinterpret_cast<std::uint8_t*>(const_cast<char*>(block.data()));
    vec[0].len = n;
    upload.left -= n;
    if (upload.left == 0 && !upload.open) *flags |= NGHTTP3_DATA_FLAG_EOF;
    return count > 0 ? 1 : 0;
  }

  void read_all() {
    std::array<std::uint8_t, 65536> buffer;
    for (;;) {
      const auto n = recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n <= 0) return;
      ngtcp2_pkt_info pi{};
      auto p = path();
      const int rv = ngtcp2_conn_read_pkt(conn_, &p, &pi, buffer.data(), static_cast<std::size_t>(n), now());
      if (rv != 0) {
        failed_ = rv != NGTCP2_ERR_DRAINING;
        draining_ = true;
        ngtcp2_connection_close_error error;
        ngtcp2_conn_get_connection_close_error(conn_, &error);
        if (error.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION) close_code_ = error.error_code;
        return;
      }
    }
  }

  void flush() {
    if (conn_ == nullptr || failed_ || draining_) return;
    struct Sink final : quic::PacketSink {
      int fd;
      explicit Sink(int fd) : fd(fd) {}
      bool send(const ngtcp2_path&, const std::uint8_t* data, std::size_t size) override {
        ::send(fd, data, size, 0);
        return true;
      }
    } sink(fd_);
    std::array<std::uint8_t, 1500> packet;
    const auto result = quic::write_packets(conn_, http_, packet, nullptr, now(), INT_MAX, sink);
    if (result.end == quic::WriteResult::End::http_failed ||
        result.end == quic::WriteResult::End::quic_failed)
      failed_ = true;
  }

  int fd_ = -1;
  sockaddr_in remote_{};
  sockaddr_in local_{};
  ngtcp2_conn* conn_ = nullptr;
  nghttp3_conn* http_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  gnutls_certificate_credentials_t credentials_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  std::map<std::int64_t, Upload> uploads_;
  std::map<std::int64_t, Response> responses_;
  bool failed_ = false;
  bool draining_ = false;
  std::optional<std::uint64_t> close_code_;
};

}  // namespace loadlab::target::testing
