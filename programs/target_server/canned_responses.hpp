#pragma once
// Response bytes. The common answer (the configured status and body) is serialized once at
// start-up for each (HTTP version, keep-alive, HEAD), so the hot path writes a ready buffer: no
// fields, no serializer, no allocation. Responses shaped by `x-loadlab-*` headers are built per
// request with append_head() into a buffer the session reuses.
#include <array>
#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loadlab::target {

// Appends a status line and header: Server, Content-Type, Content-Length (absent when
// `content_length` is nullopt: 204 and 304), and Connection where the version needs it.
void append_head(std::string& out, unsigned status, bool http10, bool keep_alive,
                 std::optional<std::uint64_t> content_length, std::string_view content_type = "text/plain");

// Statuses whose responses carry no body (RFC 9110 §15.3.5, §15.4.5).
inline bool status_has_body(unsigned status) { return status != 204 && status != 304; }

// `size` bytes of filler (repeated 'x') as a sequence of views into one shared block.
class Filler {
 public:
  static constexpr std::size_t kBlock = 64 * 1024;
  static std::string_view block();
};

struct CannedResponse {
  std::string_view bytes;  // status line, header and (when small) the body
  std::string_view tail;   // the body when too large to copy into every variant; else empty
};

class CannedResponses {
 public:
  // `status` in 200..599; `body` is sent unless HEAD or a bodiless status.
  explicit CannedResponses(std::string body, unsigned status = 200);

  CannedResponse ok(bool http10, bool keep_alive, bool head) const {
    const auto i = (http10 ? 4 : 0) + (keep_alive ? 2 : 0) + (head ? 1 : 0);
    return {ok_[i], head || inline_body_ ? std::string_view{} : std::string_view(body_)};
  }
  const std::string& body() const { return body_; }
  unsigned status() const { return status_; }

  // An error response (400, 413 or 431) that announces `Connection: close`.
  std::string_view error(boost::beast::http::status status) const;
  // The body of that error response alone (HTTP/2 frames its own head).
  static std::string_view error_body(boost::beast::http::status status);

 private:
  std::string body_;
  unsigned status_;
  bool inline_body_;
  std::array<std::string, 8> ok_;
  std::string bad_request_;
  std::string payload_too_large_;
  std::string header_too_large_;
};

}  // namespace loadlab::target
