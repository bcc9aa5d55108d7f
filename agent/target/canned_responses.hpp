#pragma once
// Every response the target can send, serialized once at start-up.
//
// The target answers every request with the same body, so the bytes on the wire depend only on
// (HTTP version, keep-alive, HEAD) or on the error status. Serializing them once through Beast
// keeps the formatting Beast's while the hot path writes a ready buffer: no fields, no
// serializer, no allocation per response.
#include <array>
#include <boost/beast/http/status.hpp>
#include <string>
#include <string_view>

namespace loadlab::target {

class CannedResponses {
 public:
  explicit CannedResponses(std::string_view body);

  // 200 with the body (or only its header for HEAD). `http10` answers in HTTP/1.0 and, when
  // `keep_alive`, says `Connection: keep-alive`; HTTP/1.1 says `Connection: close` when not.
  std::string_view ok(bool http10, bool keep_alive, bool head) const {
    return ok_[(http10 ? 4 : 0) + (keep_alive ? 2 : 0) + (head ? 1 : 0)];
  }

  // An error response (400, 413 or 431) that announces `Connection: close`.
  std::string_view error(boost::beast::http::status status) const;

 private:
  std::array<std::string, 8> ok_;
  std::string bad_request_;
  std::string payload_too_large_;
  std::string header_too_large_;
};

}  // namespace loadlab::target
