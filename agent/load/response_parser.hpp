#pragma once
// An HTTP/1.1 response parser that keeps only the status: no field storage, the body is
// consumed and dropped, so parsing a response allocates nothing. Internal.
#include <boost/beast/http/basic_parser.hpp>
#include <cstdint>

namespace loadlab::load {

class ResponseParser final : public boost::beast::http::basic_parser<false> {
 public:
  ResponseParser() = default;
  int status() const { return status_; }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;
  void on_request_impl(boost::beast::http::verb, string_view, string_view, int, error_code&) override {}
  void on_response_impl(int code, string_view, int, error_code&) override { status_ = code; }
  void on_field_impl(boost::beast::http::field, string_view, string_view, error_code&) override {}
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view body, error_code&) override { return body.size(); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  int status_ = 0;
};

}  // namespace loadlab::load
