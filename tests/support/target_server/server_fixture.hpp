#pragma once
// The in-process HTTP/1.1 target's tests (server_test.cpp, knob_truth_test.cpp): a small Beast
// client whose every operation is bounded by a tcp_stream timeout, the server's options, the
// stats endpoint's body and the time since an instant in ms.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server.hpp"

namespace loadlab::target::testing {

// Every operation of the test clients ends within this.
inline constexpr std::chrono::seconds kIoTimeout{5};

class TestClient {
 public:
  using error_code = boost::beast::error_code;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using Verb = boost::beast::http::verb;

  explicit TestClient(uint16_t port) {
    stream_.expires_after(kIoTimeout);
    stream_.async_connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port),
                          [this](error_code ec) { ec_ = ec; });
    run();
  }

  error_code connect_error() const { return ec_; }

  error_code send_raw(std::string_view bytes) {
    stream_.expires_after(kIoTimeout);
    boost::asio::async_write(stream_, boost::asio::buffer(bytes.data(), bytes.size()),
                             [this](error_code ec, std::size_t) { ec_ = ec; });
    run();
    return ec_;
  }

  error_code send(Verb verb, bool keep_alive = true, unsigned version = 11) {
    namespace http = boost::beast::http;
    http::request<http::empty_body> req{verb, "/test/fun", version};
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(keep_alive);
    stream_.expires_after(kIoTimeout);
    http::async_write(stream_, req, [this](error_code ec, std::size_t) { ec_ = ec; });
    run();
    return ec_;
  }

  // One request with extra header fields, and its response.
  Response request_with(const std::vector<std::pair<std::string, std::string>>& fields, Verb verb = Verb::get,
                        std::string target = "/test/fun") {
    namespace http = boost::beast::http;
    http::request<http::empty_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [name, value] : fields) req.set(name, value);
    stream_.expires_after(kIoTimeout);
    http::async_write(stream_, req, [this](error_code ec, std::size_t) { ec_ = ec; });
    run();
    Response res;
    EXPECT_FALSE(ec_) << ec_.message();
    EXPECT_FALSE(read(res, verb == Verb::head)) << ec_.message();
    return res;
  }

  // Reads one response; `head` tells the parser not to expect a body.
  error_code read(Response& out, bool head = false) {
    namespace http = boost::beast::http;
    http::response_parser<http::string_body> parser;
    parser.skip(head);
    parser.body_limit(128 * 1024 * 1024);
    stream_.expires_after(kIoTimeout);
    http::async_read(stream_, buffer_, parser, [this](error_code ec, std::size_t) { ec_ = ec; });
    run();
    if (!ec_) out = parser.release();
    return ec_;
  }

  Response request(Verb verb, bool keep_alive = true, unsigned version = 11) {
    Response res;
    EXPECT_FALSE(send(verb, keep_alive, version)) << ec_.message();
    EXPECT_FALSE(read(res, verb == Verb::head)) << ec_.message();
    return res;
  }

  // True when the server closed its side: the next read ends with EOF within `wait`.
  bool server_closed(std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) {
    if (buffer_.size() != 0) return false;  // unexpected bytes after the response
    char byte;
    stream_.expires_after(wait);
    stream_.async_read_some(boost::asio::buffer(&byte, 1), [this](error_code ec, std::size_t) { ec_ = ec; });
    run();
    return ec_ == boost::asio::error::eof;
  }

 private:
  void run() {
    ioc_.restart();
    ioc_.run();
  }

  boost::asio::io_context ioc_{1};
  boost::beast::tcp_stream stream_{ioc_};
  boost::beast::flat_buffer buffer_;
  error_code ec_;
};

// The stats endpoint's body for a plain server.
inline std::string stats_body(std::uint64_t requests, std::uint64_t connections) {
  return "{\"requests\": " + std::to_string(requests) + ", \"connections\": " + std::to_string(connections) +
         ", \"tls_handshakes\": 0, \"tls_resumed\": 0, \"h2_connections\": 0, \"h2_streams\": 0"
         ", \"h3_connections\": 0, \"h3_streams\": 0, \"h3_resumed\": 0, \"h3_early_data\": 0}\n";
}

// The options of a server with `threads` io threads and a fixed `delay`.
inline ServerOptions options_with(unsigned threads = 1,
                                  std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
  ServerOptions options;
  options.threads = threads;
  options.delay.a_ms = static_cast<double>(delay.count());
  return options;
}

// Milliseconds from `start` to now.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace loadlab::target::testing
