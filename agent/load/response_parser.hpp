#pragma once
// An HTTP/1.1 response parser that keeps only the status: no field storage, the body is
// consumed and dropped, so parsing a response allocates nothing. Internal.
#include "loadlab/shared/discarding_parser.hpp"

namespace loadlab::load {

class ResponseParser final : public loadlab::DiscardingParser<false> {
 public:
  ResponseParser() = default;
  int status() const { return status_; }

 private:
  void on_response_impl(int code, string_view, int, error_code&) override { status_ = code; }

  int status_ = 0;
};

}  // namespace loadlab::load
