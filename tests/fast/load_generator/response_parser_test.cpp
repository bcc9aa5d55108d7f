// The load generator's response parser: the status it records, and what it refuses.
#include "response_parser.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <string>

namespace loadlab::load {
namespace {

namespace http = boost::beast::http;

boost::beast::error_code parse(const std::string& bytes, ResponseParser& parser) {
  boost::beast::error_code ec;
  parser.eager(true);
  parser.put(boost::asio::buffer(bytes), ec);
  return ec;
}

TEST(LoadResponseParser, KeepsTheStatusOfAnyThreeDigitCodeFrom100) {
  for (int code : {100, 200, 404, 599, 999}) {
    ResponseParser parser;
    auto ec = parse("HTTP/1.1 " + std::to_string(code) + " X\r\nContent-Length: 0\r\n\r\n", parser);
    EXPECT_FALSE(ec) << code << ": " << ec.message();
    EXPECT_TRUE(parser.is_done()) << code;
    EXPECT_EQ(parser.status(), code);
  }
}

TEST(LoadResponseParser, StatusBelow100IsABadResponse) {
  // Found by fuzzing: Beast reads "099" as 99, which the worker then counted as a status.
  for (const char* code : {"000", "099"}) {
    ResponseParser parser;
    EXPECT_EQ(parse(std::string("HTTP/1.1 ") + code + " X\r\nContent-Length: 0\r\n\r\n", parser),
              http::error::bad_status)
        << code;
  }
}

}  // namespace
}  // namespace loadlab::load
