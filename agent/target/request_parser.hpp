#pragma once
// A request parser that keeps only what the target answers from: version, HEAD, whether the
// target is the stats endpoint, and the `x-loadlab-*` knobs. Beast's basic_parser does the
// framing (Content-Length, chunked, keep-alive, limits); no field is stored and the body is
// discarded as it streams, so parsing a request allocates nothing.
#include <boost/beast/http/basic_parser.hpp>

#include "knobs.hpp"

namespace loadlab::target {

inline constexpr std::string_view kStatsPath = "/__loadlab/stats";

class RequestParser : public boost::beast::http::basic_parser<true> {
 public:
  int version() const { return version_; }
  bool head() const { return method_ == boost::beast::http::verb::head; }
  bool stats() const { return stats_; }
  const RequestKnobs& knobs() const { return knobs_; }

 private:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  void on_request_impl(boost::beast::http::verb method, string_view, string_view target, int version,
                       error_code&) override {
    method_ = method;
    version_ = version;
    stats_ = method == boost::beast::http::verb::get &&
             std::string_view(target.data(), target.size()) == kStatsPath;
  }
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code&) override {
    if (name == boost::beast::http::field::unknown) {
      knobs_.apply(std::string_view(name_string.data(), name_string.size()),
                   std::string_view(value.data(), value.size()));
    }
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view body, error_code&) override { return body.size(); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  boost::beast::http::verb method_ = boost::beast::http::verb::unknown;
  int version_ = 11;
  bool stats_ = false;
  RequestKnobs knobs_;
};

}  // namespace loadlab::target
