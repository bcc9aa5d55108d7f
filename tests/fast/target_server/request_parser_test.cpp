// The target's request framing: what it accepts, and the ambiguous framings (RFC 9112 §6.3)
// it rejects so that no request can hide inside another's body.
#include "request_parser.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <string>

namespace loadlab::target {
namespace {

namespace http = boost::beast::http;

struct Parsed {
  boost::beast::error_code ec;
  std::size_t used = 0;  // bytes of the input the first request took
  bool done = false;
};

// Parses the first request of `bytes` as the session does (eager, whole buffer at once).
Parsed parse(const std::string& bytes) {
  RequestParser parser;
  parser.eager(true);
  Parsed out;
  while (out.used < bytes.size() && !parser.is_done()) {
    const auto n = parser.put(boost::asio::buffer(bytes.data() + out.used, bytes.size() - out.used), out.ec);
    out.used += n;
    if (out.ec || n == 0) break;
  }
  out.done = parser.is_done();
  return out;
}

std::string post(const std::string& fields, const std::string& body, const char* version = "1.1") {
  return std::string("POST /upload HTTP/") + version + "\r\nHost: x\r\n" + fields + "\r\n" + body;
}

const std::string kSmuggled = "GET /__loadlab/stats HTTP/1.1\r\nHost: x\r\n\r\n";

TEST(TargetRequestParser, ChunkedBodyEndsWhereItsLastChunkSays) {
  const std::string first = post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n");
  auto p = parse(first + kSmuggled);
  EXPECT_FALSE(p.ec) << p.ec.message();
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.used, first.size());  // the next request starts where the chunked body ended
}

TEST(TargetRequestParser, ChunkedAsTheFinalCodingIsAccepted) {
  for (const char* fields :
       {"Transfer-Encoding: gzip, chunked\r\n", "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "transfer-encoding: CHUNKED\r\n"}) {
    auto p = parse(post(fields, "0\r\n\r\n"));
    EXPECT_FALSE(p.ec) << fields << p.ec.message();
    EXPECT_TRUE(p.done) << fields;
  }
}

TEST(TargetRequestParser, TransferEncodingNotEndingInChunkedIsRejected) {
  // The reported smuggle: with `gzip` alone Beast saw no body, and the body was the next request.
  for (const char* fields :
       {"Transfer-Encoding: gzip\r\n", "Transfer-Encoding: chunked, gzip\r\n",
        "Transfer-Encoding: chunked, chunked\r\n", "Transfer-Encoding: identity\r\n",
        "Transfer-Encoding: \r\n", "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
        "Transfer-Encoding: xchunked\r\n"}) {
    auto p = parse(post(fields, kSmuggled));
    EXPECT_TRUE(p.ec) << fields;
  }
}

TEST(TargetRequestParser, TransferEncodingWithContentLengthIsRejectedInEitherOrder) {
  for (const char* fields : {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                             "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                             "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n",
                             "Content-Length: 5\r\nTransfer-Encoding: gzip\r\n"}) {
    auto p = parse(post(fields, "0\r\n\r\n" + kSmuggled));
    EXPECT_TRUE(p.ec) << fields;
  }
}

TEST(TargetRequestParser, TransferEncodingInHttp10IsRejected) {
  // RFC 9112 §6.1: an HTTP/1.0 recipient may not know chunked; its framing is faulty.
  auto p = parse(post("Transfer-Encoding: chunked\r\n", "0\r\n\r\n", "1.0"));
  EXPECT_EQ(p.ec, http::error::bad_transfer_encoding);
}

TEST(TargetRequestParser, InvalidOrConflictingContentLengthIsRejected) {
  for (const char* fields : {"Content-Length: 5\r\nContent-Length: 6\r\n", "Content-Length: 5, 6\r\n",
                             "Content-Length: -1\r\n", "Content-Length: 0x5\r\n", "Content-Length: 5 5\r\n",
                             "Content-Length: \r\n", "Content-Length: 99999999999999999999999\r\n"}) {
    auto p = parse(post(fields, "hello"));
    EXPECT_EQ(p.ec, http::error::bad_content_length) << fields;
  }
}

TEST(TargetRequestParser, RepeatedEqualContentLengthIsOneLength) {
  // RFC 9112 §6.3 item 5 allows a list of identical values; the body is still 5 bytes.
  for (const char* fields : {"Content-Length: 5\r\nContent-Length: 5\r\n", "Content-Length: 5, 5\r\n"}) {
    const std::string first = post(fields, "hello");
    auto p = parse(first + kSmuggled);
    EXPECT_FALSE(p.ec) << fields << p.ec.message();
    EXPECT_EQ(p.used, first.size()) << fields;
  }
}

}  // namespace
}  // namespace loadlab::target
