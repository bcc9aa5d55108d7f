#include "loadlab/shared/endpoint.hpp"

#include <gtest/gtest.h>

#include "loadlab/shared/json_input.hpp"

namespace loadlab {
namespace {

TEST(Endpoint, ParsesHostPortAndIpv6) {
  auto a = parse_endpoint("127.0.0.1:8080");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  auto b = parse_endpoint("[::1]:0");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->to_string(), "[::1]:0");
}

TEST(Endpoint, RejectsMalformed) {
  for (auto* bad : {"", "host", "host:", ":80", "host:65536", "host:8x", "::1:80", "[::1:80"})
    EXPECT_FALSE(parse_endpoint(bad)) << bad;
}

TEST(Endpoint, LoopbackIsWhatOnlyThisMachineCanReach) {
  for (auto* local : {"127.0.0.1:7700", "127.255.0.9:1", "[::1]:7700", "localhost:0", "[::ffff:127.0.0.1]:80",
                      "unix:/run/loadlab.sock"})
    EXPECT_TRUE(is_loopback_address(local)) << local;
  for (auto* network : {"0.0.0.0:7700", "10.0.0.1:7700", "[::]:7700", "[fe80::1]:1", "lab-host:7700",
                        "128.0.0.1:1", "[::ffff:10.0.0.1]:80", "nonsense"})
    EXPECT_FALSE(is_loopback_address(network)) << network;
}

TEST(ObjectReader, NamesThePathOfAnUnknownKeyAndTheAllowedOnes) {
  auto j = nlohmann::json::parse(R"({"a": {"x": 1, "typo": 2}})");
  ObjectReader root(j, "");
  try {
    root.object("a").allow({"x", "y"});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/a/typo");
    EXPECT_NE(std::string(e.what()).find("allowed here: x, y"), std::string::npos);
  }
}

TEST(ObjectReader, NamesTheArrayElementOfAWrongValue) {
  auto j = nlohmann::json::parse(R"({"threads": [1, 5, -2]})");
  try {
    ObjectReader(j, "").integers("threads", 1, 100);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/threads/2: must be an integer in 1..100");
  }
}

}  // namespace
}  // namespace loadlab
