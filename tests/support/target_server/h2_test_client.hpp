#pragma once
// A small HTTP/2 client for the target's tests: h2c with prior knowledge over a blocking TCP
// socket on 127.0.0.1, libnghttp2 for the framing. It submits requests (several at once on one
// connection), can reset a stream or drop the connection, and runs until the responses asked
// for are complete or a deadline passes. Every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace loadlab::target::testing {

class H2Client {
 public:
  using Clock = std::chrono::steady_clock;
  using Headers = std::vector<std::pair<std::string, std::string>>;

  struct Response {
    int status = 0;
    std::map<std::string, std::string> headers;
    std::string body;
    bool closed = false;           // the stream ended
    std::uint32_t error_code = 0;  // its RST_STREAM code, if reset
    Clock::time_point done;
  };

  explicit H2Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame);
    nghttp2_session_client_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    // Large windows, so a big response is never held by our flow control.
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (1u << 31) - 1}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, (1 << 30));
  }
  ~H2Client() {
    nghttp2_session_del(session_);
    if (fd_ >= 0) ::close(fd_);
  }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  bool connected() const { return connected_; }
  bool goaway_received() const { return goaway_; }
  // The server closed the connection (EOF or reset).
  bool server_closed() const { return eof_; }

  // Submits a request; returns its stream id (the key of responses()). `body` non-empty: POST.
  std::int32_t submit(const Headers& extra = {}, std::string path = "/", std::string method = "GET",
                      std::string body = {}) {
    Headers all = {{":method", method}, {":scheme", "http"}, {":authority", "127.0.0.1"}, {":path", path}};
    all.insert(all.end(), extra.begin(), extra.end());
    std::vector<nghttp2_nv> nva;
    for (auto& [name, value] : all) {
      nva.push_back({reinterpret_cast<std::uint8_t*>(name.data()),
                     reinterpret_cast<std::uint8_t*>(value.data()), name.size(), value.size(),
                     NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_data_provider provider{};
    auto upload = std::make_unique<Upload>(Upload{std::move(body), 0, false});
    provider.source.ptr = upload.get();
    provider.read_callback = read_upload;
    const bool has_body = !upload->bytes.empty();
    const auto id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                                           has_body ? &provider : nullptr, nullptr);
    if (id > 0) {
      responses_[id];
      uploads_.push_back(std::move(upload));
    }
    return id;
  }

  // Submits a POST whose body never comes: the request stays incomplete (a slowloris).
  std::int32_t submit_unfinished() {
    const auto id = submit({}, "/", "POST", "never sent");
    uploads_.back()->hold = true;
    return id;
  }

  void reset(std::int32_t id) { nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL); }

  // Exchanges frames until `done()` holds, the connection ends or `timeout` passes; returns
  // whether `done()` held.
  bool run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = Clock::now() + timeout;
    while (!done()) {
      if (!send_pending() || eof_) return done();
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 50))) <= 0) continue;
      std::uint8_t chunk[64 * 1024];
      const auto n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) {
        eof_ = true;
        return done();
      }
      if (nghttp2_session_mem_recv(session_, chunk, static_cast<std::size_t>(n)) < 0) return false;
    }
    send_pending();
    return true;
  }

  // Runs until every submitted stream has ended.
  bool run_all(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return run_until(
        [this] {
          for (auto& [id, res] : responses_)
            if (!res.closed) return false;
          return true;
        },
        timeout);
  }

  // One GET (or other request) on this connection, run to completion.
  Response request(const Headers& extra = {}, std::string path = "/", std::string method = "GET",
                   std::string body = {}) {
    const auto id = submit(extra, std::move(path), std::move(method), std::move(body));
    EXPECT_TRUE(run_until([&] { return responses_[id].closed; })) << "no response on stream " << id;
    return responses_[id];
  }

  std::map<std::int32_t, Response>& responses() { return responses_; }

  // Closes the TCP connection at once (a client that leaves).
  void drop() {
    ::close(fd_);
    fd_ = -1;
  }

 private:
  struct Upload {
    std::string bytes;
    std::size_t sent;
    bool hold = false;  // defer the body for ever
  };

  bool send_pending() {
    for (;;) {
      const std::uint8_t* data = nullptr;
      const auto n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) return true;
      for (ssize_t off = 0; off < n;) {
        const auto w = ::send(fd_, data + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) return false;
        off += w;
      }
    }
  }

  static H2Client& self(void* user_data) { return *static_cast<H2Client*>(user_data); }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_size, const std::uint8_t* value, std::size_t value_size, std::uint8_t,
                       void* user_data) {
    auto& res = self(user_data).responses_[frame->hd.stream_id];
    const std::string n(reinterpret_cast<const char*>(name), name_size);
    const std::string v(reinterpret_cast<const char*>(value), value_size);
    if (n == ":status") res.status = std::stoi(v);
    res.headers[n] = v;
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                     std::size_t size, void* user_data) {
    self(user_data).responses_[id].body.append(reinterpret_cast<const char*>(data), size);
    return 0;
  }
  static int on_close(nghttp2_session*, std::int32_t id, std::uint32_t error_code, void* user_data) {
    auto& res = self(user_data).responses_[id];
    res.closed = true;
    res.error_code = error_code;
    res.done = Clock::now();
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_GOAWAY) self(user_data).goaway_ = true;
    return 0;
  }
  static ssize_t read_upload(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                             std::uint32_t* flags, nghttp2_data_source* source, void*) {
    auto& upload = *static_cast<Upload*>(source->ptr);
    if (upload.hold) return NGHTTP2_ERR_DEFERRED;
    const auto n = std::min(length, upload.bytes.size() - upload.sent);
    std::copy_n(upload.bytes.data() + upload.sent, n, buf);
    upload.sent += n;
    if (upload.sent == upload.bytes.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  bool goaway_ = false;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, Response> responses_;
  std::vector<std::unique_ptr<Upload>> uploads_;
};

}  // namespace loadlab::target::testing
