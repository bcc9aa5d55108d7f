#pragma once
// A tiny HTTP/2 server with prior knowledge (h2c) for the load worker's tests: nghttp2's
// server session over Asio on 127.0.0.1:0, its own thread. Counts connections and requests
// and the most streams one connection had open at once; answers every request with 200
// "hello" after an optional delay; optionally sends GOAWAY on a connection once it has
// received `goaway_after` requests (its last stream id the last of those: the streams the
// client opened after it are not processed, RFC 9113 §6.8) and closes it when they are
// answered.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace loadlab::load::testing {

struct H2ServerOptions {
  std::chrono::milliseconds delay{0};
  int goaway_after = 0;  // 0 = never
};

class H2TestServer {
 public:
  explicit H2TestServer(H2ServerOptions options = {}) : options_(options) {
    do_accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~H2TestServer() {
    ioc_.stop();
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()) + "/"; }
  int64_t connections() const { return connections_.load(); }
  int64_t requests() const { return requests_.load(); }
  int64_t max_open_streams() const { return max_open_.load(); }

 private:
  using tcp = boost::asio::ip::tcp;

  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(H2TestServer& server, tcp::socket socket) : server_(server), socket_(std::move(socket)) {}
    ~Session() {
      if (session_) nghttp2_session_del(session_);
    }

    void start() {
      nghttp2_session_callbacks* cb = nullptr;
      nghttp2_session_callbacks_new(&cb);
      nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &Session::on_frame_recv);
      nghttp2_session_callbacks_set_on_stream_close_callback(cb, &Session::on_stream_close);
      nghttp2_session_server_new(&session_, cb, this);
      nghttp2_session_callbacks_del(cb);
      nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
      nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
      flush();
      do_read();
    }

   private:
    static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
      auto* self = static_cast<Session*>(user_data);
      if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST &&
          (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        self->on_request(frame->hd.stream_id);
      return 0;
    }
    static int on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
      auto* self = static_cast<Session*>(user_data);
      if (self->goaway_last_ == 0 || stream_id <= self->goaway_last_) --self->open_;
      return 0;
    }
    static ssize_t read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t, uint32_t* flags,
                             nghttp2_data_source*, void*) {
      std::memcpy(buf, "hello", 5);
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return 5;
    }

    void on_request(int32_t stream_id) {
      // Above the GOAWAY's last stream id (it came before the GOAWAY went out): not processed.
      if (goaway_last_ > 0 && stream_id > goaway_last_) return;
      ++open_;
      ++received_;
      server_.requests_.fetch_add(1);
      int64_t seen = server_.max_open_.load();
      while (open_ > seen && !server_.max_open_.compare_exchange_weak(seen, open_)) {
      }
      if (server_.options_.goaway_after > 0 && received_ == server_.options_.goaway_after) {
        goaway_last_ = stream_id;
        nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR, nullptr, 0);
      }
      if (server_.options_.delay.count() == 0) return respond(stream_id);
      auto timer =
          std::make_shared<boost::asio::steady_timer>(socket_.get_executor(), server_.options_.delay);
      timer->async_wait([self = shared_from_this(), timer, stream_id](boost::system::error_code ec) {
        if (ec) return;
        self->respond(stream_id);
        self->flush();
      });
    }
    void respond(int32_t stream_id) {
      static const nghttp2_nv kHeaders[] = {
          {(uint8_t*)":status", (uint8_t*)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
          {(uint8_t*)"content-length", (uint8_t*)"5", 14, 1, NGHTTP2_NV_FLAG_NONE}};
      nghttp2_data_provider body{};
      body.read_callback = &Session::read_body;
      nghttp2_submit_response(session_, stream_id, kHeaders, 2, &body);
    }

    void do_read() {
      socket_.async_read_some(boost::asio::buffer(in_),
                              [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                                if (ec) return;
                                if (nghttp2_session_mem_recv(self->session_, self->in_.data(), n) < 0) return;
                                self->flush();
                                self->do_read();
                              });
    }
    void flush() {
      if (writing_) return;
      out_.clear();
      const uint8_t* data = nullptr;
      for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;)
        out_.insert(out_.end(), data, data + n);
      if (out_.empty()) {
        if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
          boost::system::error_code ignored;
          socket_.shutdown(tcp::socket::shutdown_both, ignored);
        }
        return;
      }
      writing_ = true;
      boost::asio::async_write(socket_, boost::asio::buffer(out_),
                               [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                                 self->writing_ = false;
                                 if (!ec) self->flush();
                               });
    }

    H2TestServer& server_;
    tcp::socket socket_;
    nghttp2_session* session_ = nullptr;
    std::array<uint8_t, 16384> in_{};
    std::vector<uint8_t> out_;
    bool writing_ = false;
    int64_t open_ = 0;
    int received_ = 0;
    int32_t goaway_last_ = 0;
  };

  void do_accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;
      connections_.fetch_add(1);
      socket.set_option(tcp::no_delay(true));
      std::make_shared<Session>(*this, std::move(socket))->start();
      do_accept();
    });
  }

  H2ServerOptions options_;
  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_{ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::thread thread_;
  std::atomic<int64_t> connections_{0};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> max_open_{0};
};

}  // namespace loadlab::load::testing
