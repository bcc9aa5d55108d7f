#pragma once
// A request parser that keeps only what the target answers from: version, HEAD, whether the
// target is the stats endpoint, and the `x-loadlab-*` knobs. Beast's basic_parser does the
// framing (Content-Length, chunked, keep-alive, limits); no field is stored and the body is
// discarded as it streams, so parsing a request allocates nothing.
//
// Framing the target cannot be sure of is an error (the session answers 400 and closes), so
// a proxy in front that frames the request another way cannot smuggle a second request
// inside the body (RFC 9112 §6.1, §6.3). Beast 1.74 already rejects Content-Length with a
// chunked Transfer-Encoding and a bad or conflicting Content-Length; it treats a request
// whose Transfer-Encoding does not end in `chunked` as having no body, which this parser
// rejects: any Transfer-Encoding that Beast did not take as chunked framing, and any
// Transfer-Encoding in an HTTP/1.0 request.
#include <boost/beast/http/error.hpp>

#include "knobs.hpp"
#include "loadlab/shared/discarding_parser.hpp"

namespace loadlab::target {

inline constexpr std::string_view kStatsPath = "/__loadlab/stats";

class RequestParser : public loadlab::DiscardingParser<true> {
 public:
  int version() const { return version_; }
  bool head() const { return method_ == boost::beast::http::verb::head; }
  bool stats() const { return stats_; }
  const RequestKnobs& knobs() const { return knobs_; }

 private:
  void on_request_impl(boost::beast::http::verb method, string_view, string_view target, int version,
                       error_code&) override {
    method_ = method;
    version_ = version;
    stats_ = method == boost::beast::http::verb::get &&
             std::string_view(target.data(), target.size()) == kStatsPath;
  }
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code&) override {
    if (name == boost::beast::http::field::transfer_encoding) {
      transfer_encoding_ = true;
    } else if (name == boost::beast::http::field::unknown) {
      knobs_.apply(std::string_view(name_string.data(), name_string.size()),
                   std::string_view(value.data(), value.size()));
    }
  }
  void on_header_impl(error_code& ec) override {
    if (transfer_encoding_ && (!this->chunked() || version_ < 11))
      ec = boost::beast::http::error::bad_transfer_encoding;
  }

  boost::beast::http::verb method_ = boost::beast::http::verb::unknown;
  int version_ = 11;
  bool stats_ = false;
  bool transfer_encoding_ = false;
  RequestKnobs knobs_;
};

}  // namespace loadlab::target
