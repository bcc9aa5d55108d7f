// The load generator's one-pass read of a whole response (complete_response.hpp): what it
// takes, what it leaves to Beast's parser, and that for what it takes Beast's parser says the
// same.
#include "complete_response.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <random>
#include <string>
#include <vector>

#include "response_parser.hpp"

namespace loadlab::load {
namespace {

// What Beast's parser (as the connection drives it: no body limit) makes of the first response
// in `bytes`; nullopt when it refuses it or wants more.
std::optional<CompleteResponse> beast(const std::string& bytes) {
  ResponseParser p;
  p.eager(true);
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  boost::beast::error_code ec;
  std::size_t used = p.put(boost::asio::buffer(bytes), ec);
  if (ec || !p.is_done()) return std::nullopt;
  return CompleteResponse{p.status(), used, p.keep_alive()};
}

const std::string kTargetAnswer =
    "HTTP/1.1 200 OK\r\nServer: loadlab-target\r\nContent-Type: text/plain\r\nContent-Length: 19\r\n\r\n"
    "Have Fun ~ Tester !";

TEST(CompleteResponse, TakesTheTargetsAnswerWithTheBytesBeyondItLeftForTheNext) {
  auto r = complete_response(kTargetAnswer + "HTTP/1.1 200 OK\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->size, kTargetAnswer.size());
  EXPECT_TRUE(r->keep_alive);
  auto b = beast(kTargetAnswer);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->size, r->size);
}

TEST(CompleteResponse, ReadsConnectionCloseAndKeepAliveInAnyCase) {
  for (auto [value, keep_alive] : {std::pair{"close", false},
                                   {"Close", false},
                                   {"keep-alive", true},
                                   {"Keep-Alive", true},
                                   {" close \t", false}}) {
    std::string bytes =
        std::string("HTTP/1.1 404 Not Found\r\ncOnNeCtIoN:") + value + "\r\ncontent-length: 0\r\n\r\n";
    auto r = complete_response(bytes);
    ASSERT_TRUE(r) << value;
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(r->keep_alive, keep_alive) << value;
    EXPECT_EQ(beast(bytes)->keep_alive, keep_alive) << value;
  }
}

TEST(CompleteResponse, LeavesToBeastWhatItDoesNotDecideAlone) {
  const std::string cl = "Content-Length: 2\r\n";
  for (const std::string& bytes : {
           std::string("HTTP/1.0 200 OK\r\n") + cl + "\r\nok",  // another version
           std::string("http/1.1 200 OK\r\n") + cl + "\r\nok",  //
           std::string("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n") + cl + "\r\nok",  // interim
           std::string("HTTP/1.1 204 No Content\r\n") + cl + "\r\n",    // no body by status
           std::string("HTTP/1.1 304 Not Modified\r\n") + cl + "\r\n",  //
           std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
           std::string("HTTP/1.1 200 OK\r\n\r\nclose-delimited"),                       // no length
           std::string("HTTP/1.1 200 OK\r\n") + cl + cl + "\r\nok",                     // twice
           std::string("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok"),              //
           std::string("HTTP/1.1 200 OK\r\nConnection: close, x\r\n") + cl + "\r\nok",  // a list
           std::string("HTTP/1.1 200 OK\r\nConnection: upgrade\r\n") + cl + "\r\nok",   //
           std::string("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n") + cl + "\r\nok",            // obs-fold
           std::string("HTTP/1.1 200 OK\r\nX: caf\xc3\xa9\r\n") + cl + "\r\nok",        // obs-text
           std::string("HTTP/1.1 200 OK\r\nX : a\r\n") + cl + "\r\nok",                 // space in name
           std::string("HTTP/1.1 200 OK\nX: a\n") + cl + "\r\nok",                      // bare LF
           std::string("HTTP/1.1 200\r\n") + cl + "\r\nok",                             // no SP
           std::string("HTTP/1.1 200 OK\r\n") + cl + "\r\no",                           // not all in
           std::string("HTTP/1.1 200 OK\r\n") + cl,                                     //
           std::string("HTTP/1.1 200 OK\r\nX: ") + std::string(8000, 'a') + "\r\n" + cl + "\r\nok",
       })
    EXPECT_FALSE(complete_response(bytes)) << bytes;
}

TEST(CompleteResponse, TheReaderRemembersAHeaderBlockButNotWhatFollowsIt) {
  CompleteResponseReader reader;
  ASSERT_EQ(reader.read(kTargetAnswer)->size, kTargetAnswer.size());
  // The same header block again: its body must still be all in.
  EXPECT_FALSE(reader.read(kTargetAnswer.substr(0, kTargetAnswer.size() - 1)));
  EXPECT_EQ(reader.read(kTargetAnswer + "HTTP")->size, kTargetAnswer.size());
  // Another header block is read afresh.
  const std::string closing = "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  auto r = reader.read(closing);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_FALSE(r->keep_alive);
  EXPECT_EQ(reader.read(kTargetAnswer)->status, 200);
}

// Responses made of the pieces a server may send, and the same with one byte changed: for every
// one the pass takes, Beast's parser takes it too, with the same status, size and keep-alive;
// and one reader fed them all in turn answers as the pass does.
TEST(CompleteResponse, WhatItTakesBeastsParserReadsTheSame) {
  std::mt19937 rng(20261203);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> statuses = {"200", "201", "204", "301", "304",
                                             "404", "500", "599", "999", "100"};
  const std::vector<std::string> reasons = {"OK", "", "Not Found", "A\tB", "x~!"};
  const std::vector<std::string> names = {
      "Server",         "content-type",      "X-A",        "Date", "Connection",
      "Content-Length", "Transfer-Encoding", "Keep-Alive", "Vary"};
  const std::vector<std::string> values = {"close",      "keep-alive", "Keep-Alive", "chunked",
                                           "text/plain", "  0  ",      "12",         "007",
                                           "",           "a, b",       "\t1\t"};
  size_t taken = 0;
  CompleteResponseReader reader;  // its memory must never change an answer
  for (int i = 0; i < 40000; ++i) {
    std::string r = "HTTP/1.1 " + pick(statuses) + " " + pick(reasons) + "\r\n";
    const int fields = static_cast<int>(rng() % 5);
    for (int f = 0; f < fields; ++f) r += pick(names) + ":" + (rng() % 2 ? " " : "") + pick(values) + "\r\n";
    const size_t body = rng() % 20;
    if (rng() % 4) r += "Content-Length: " + std::to_string(body) + "\r\n";
    r += "\r\n" + std::string(body, 'b') + (rng() % 2 ? "HTTP/1.1 200 OK\r\n" : "");
    if (rng() % 2) {  // one byte changed, dropped or cut off
      const size_t at = rng() % r.size();
      switch (rng() % 3) {
        case 0:
          r[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          r.erase(at, 1);
          break;
        default:
          r.resize(at);
          break;
      }
    }
    auto fast = complete_response(r);
    auto remembered = reader.read(r);
    ASSERT_EQ(remembered.has_value(), fast.has_value()) << r;
    if (!fast) continue;
    EXPECT_EQ(remembered->status, fast->status) << r;
    EXPECT_EQ(remembered->size, fast->size) << r;
    EXPECT_EQ(remembered->keep_alive, fast->keep_alive) << r;
    ++taken;
    auto b = beast(r);
    ASSERT_TRUE(b) << "Beast's parser refuses what the pass took:\n" << r;
    EXPECT_EQ(b->status, fast->status) << r;
    EXPECT_EQ(b->size, fast->size) << r;
    EXPECT_EQ(b->keep_alive, fast->keep_alive) << r;
  }
  EXPECT_GT(taken, 5000u);  // the check looked at many
}

}  // namespace
}  // namespace loadlab::load
