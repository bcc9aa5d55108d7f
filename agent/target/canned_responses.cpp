#include "canned_responses.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <sstream>

namespace loadlab::target {

namespace http = boost::beast::http;

namespace {

std::string serialize(http::status status, unsigned version, bool keep_alive, std::string_view body,
                      bool head) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "loadlab-target");
  res.set(http::field::content_type, "text/plain");
  res.keep_alive(keep_alive);
  res.body() = std::string(body);
  res.prepare_payload();
  std::ostringstream out;
  if (head) {
    out << res.base();  // Content-Length stays the GET one, as RFC 9110 allows for HEAD
  } else {
    out << res;
  }
  return std::move(out).str();
}

}  // namespace

CannedResponses::CannedResponses(std::string_view body) {
  for (int http10 = 0; http10 < 2; ++http10) {
    for (int keep_alive = 0; keep_alive < 2; ++keep_alive) {
      for (int head = 0; head < 2; ++head) {
        ok_[http10 * 4 + keep_alive * 2 + head] =
            serialize(http::status::ok, http10 ? 10 : 11, keep_alive != 0, body, head != 0);
      }
    }
  }
  bad_request_ = serialize(http::status::bad_request, 11, false, "bad request\n", false);
  payload_too_large_ = serialize(http::status::payload_too_large, 11, false, "payload too large\n", false);
  header_too_large_ = serialize(http::status::request_header_fields_too_large, 11, false,
                                "request header fields too large\n", false);
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
