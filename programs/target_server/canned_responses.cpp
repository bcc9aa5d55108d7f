#include "canned_responses.hpp"

#include <boost/beast/http/status.hpp>
#include <charconv>
#include <ostream>

namespace loadlab::target {

namespace http = boost::beast::http;

namespace {

constexpr std::size_t kInlineBodyMax = 64 * 1024;

void append_number(std::string& out, std::uint64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

std::string error_response(unsigned status, std::string_view body) {
  std::string out;
  append_head(out, status, false, false, body.size());
  out.append(body);
  return out;
}

}  // namespace

void append_head(std::string& out, unsigned status, bool http10, bool keep_alive,
                 std::optional<std::uint64_t> content_length, std::string_view content_type) {
  out.append(http10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  append_number(out, status);
  out.push_back(' ');
  auto reason = http::obsolete_reason(static_cast<http::status>(status));
  out.append(reason.data(), reason.size());
  out.append("\r\nServer: loadlab-target\r\nContent-Type: ");
  out.append(content_type);
  if (content_length) {
    out.append("\r\nContent-Length: ");
    append_number(out, *content_length);
  }
  if (http10 && keep_alive) out.append("\r\nConnection: keep-alive");
  if (!http10 && !keep_alive) out.append("\r\nConnection: close");
  out.append("\r\n\r\n");
}

std::string_view Filler::block() {
  static const std::string block(kBlock, 'x');
  return block;
}

CannedResponses::CannedResponses(std::string body, unsigned status)
    : body_(status_has_body(status) ? std::move(body) : std::string()),
      status_(status),
      inline_body_(body_.size() <= kInlineBodyMax) {
  const bool has_body = status_has_body(status);
  for (int http10 = 0; http10 < 2; ++http10) {
    for (int keep_alive = 0; keep_alive < 2; ++keep_alive) {
      for (int head = 0; head < 2; ++head) {
        auto& out = ok_[http10 * 4 + keep_alive * 2 + head];
        // HEAD keeps the GET Content-Length, as RFC 9110 §9.3.2 allows.
        append_head(out, status, http10 != 0, keep_alive != 0,
                    has_body ? std::optional<std::uint64_t>(body_.size()) : std::nullopt);
        if (!head && inline_body_) out.append(body_);
      }
    }
  }
  bad_request_ = error_response(400, error_body(http::status::bad_request));
  payload_too_large_ = error_response(413, error_body(http::status::payload_too_large));
  header_too_large_ = error_response(431, error_body(http::status::request_header_fields_too_large));
}

std::string_view CannedResponses::error_body(http::status status) {
  switch (status) {
    case http::status::payload_too_large:
      return "payload too large\n";
    case http::status::request_header_fields_too_large:
      return "request header fields too large\n";
    default:
      return "bad request\n";
  }
}

std::string_view CannedResponses::error(http::status status) const {
  switch (status) {
    case http::status::payload_too_large:
      return payload_too_large_;
    case http::status::request_header_fields_too_large:
      return header_too_large_;
    default:
      return bad_request_;
  }
}

}  // namespace loadlab::target
