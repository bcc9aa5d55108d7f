#pragma once
// Base of the hot-path HTTP parsers (the target's requests, the load generator's
// responses): Beast's basic_parser does the framing (Content-Length, chunked, keep-alive,
// limits) while the body is consumed and dropped as it streams, so parsing allocates
// nothing. A derived parser keeps only the start-line and fields it needs.
#include <boost/beast/http/basic_parser.hpp>
#include <cstdint>

namespace loadlab {

template <bool isRequest>
class DiscardingParser : public boost::beast::http::basic_parser<isRequest> {
 protected:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  void on_request_impl(boost::beast::http::verb, string_view, string_view, int, error_code&) override {}
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field, string_view, string_view, error_code&) override {}
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view body, error_code&) override { return body.size(); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
    return body.size();
  }
  void on_finish_impl(error_code&) override {}
};

}  // namespace loadlab
