#pragma once
// An HTTP/1.1 response parser that keeps only the status: no field storage, the body is
// consumed and dropped, so parsing a response allocates nothing. Internal.
#include <boost/beast/http/error.hpp>

#include "loadlab/shared/discarding_parser.hpp"

namespace loadlab::load {

class ResponseParser final : public loadlab::DiscardingParser<false> {
 public:
  ResponseParser() = default;
  int status() const { return status_; }  // 100..999

 private:
  void on_response_impl(int code, string_view, int, error_code& ec) override {
    // Beast takes any three digits; below 100 is no HTTP status (RFC 9110 §15), so such an
    // answer counts as a bad response rather than as a response with a status.
    if (code < 100) ec = boost::beast::http::error::bad_status;
    status_ = code;
  }

  int status_ = 0;
};

}  // namespace loadlab::load
