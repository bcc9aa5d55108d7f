// Where an agent's load may go: the operator's networks, a Host header that names another
// host, and a host name pinned to the address that was checked.
#include "loadlab/agent/load_destinations.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "input_error_of.hpp"

namespace loadlab::agent {
namespace {

namespace ip = boost::asio::ip;
using loadlab::testing::input_error_of;
using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::LoadSpec spec_to(const std::string& endpoint) {
  v1::LoadSpec s;
  s.set_endpoint(endpoint);
  return s;
}

TEST(NetworkList, LoopbackHoldsAll127AndIpv6LoopbackAndNothingElse) {
  auto l = NetworkList::loopback();
  EXPECT_TRUE(l.contains(ip::make_address("127.0.0.1")));
  EXPECT_TRUE(l.contains(ip::make_address("127.255.0.9")));
  EXPECT_TRUE(l.contains(ip::make_address("::1")));
  EXPECT_TRUE(l.contains(ip::make_address("::ffff:127.0.0.1")));  // v4-mapped: the v4 host
  EXPECT_FALSE(l.contains(ip::make_address("128.0.0.1")));
  EXPECT_FALSE(l.contains(ip::make_address("10.0.0.1")));
  EXPECT_FALSE(l.contains(ip::make_address("::2")));
  EXPECT_FALSE(l.contains(ip::make_address("::ffff:10.0.0.1")));
  EXPECT_EQ(l.to_string(), "127.0.0.0/8, ::1/128");
}

TEST(NetworkList, ParsesCidrsAndBareAddressesAndNamesTheFlagOfABadOne) {
  auto l = NetworkList::parse({"10.1.2.3/16", "192.168.5.7", "fd00::/8"}, "--allow-load-to");
  EXPECT_EQ(l.to_string(), "10.1.0.0/16, 192.168.5.7/32, fd00::/8");
  EXPECT_TRUE(l.contains(ip::make_address("10.1.200.4")));
  EXPECT_FALSE(l.contains(ip::make_address("10.2.0.1")));
  EXPECT_TRUE(l.contains(ip::make_address("192.168.5.7")));
  EXPECT_FALSE(l.contains(ip::make_address("192.168.5.8")));
  EXPECT_TRUE(l.contains(ip::make_address("fd12::1")));
  EXPECT_TRUE(NetworkList::parse({"0.0.0.0/0"}, "f").contains(ip::make_address("8.8.8.8")));
  for (const char* bad :
       {"10.0.0.0/33", "::/129", "10.0.0/8", "example.com", "10.0.0.0/", "10.0.0.0/x", ""}) {
    auto e = input_error_of([&] { (void)NetworkList::parse({bad}, "--allow-load-to"); });
    EXPECT_THAT(e, StartsWith("--allow-load-to: "));
    EXPECT_THAT(e, HasSubstr("\"" + std::string(bad) + "\""));
  }
}

TEST(LoadDestination, AnAllowedEndpointPassesUnchanged) {
  auto s = spec_to("127.0.0.1:8080");
  check_load_destination(s, NetworkList::loopback());
  EXPECT_EQ(s.endpoint(), "127.0.0.1:8080");
  EXPECT_TRUE(s.headers().empty());
  auto v6 = spec_to("[::1]:80");
  check_load_destination(v6, NetworkList::loopback());
  EXPECT_EQ(v6.endpoint(), "[::1]:80");
}

TEST(LoadDestination, AnEndpointOutsideTheNetworksIsRefusedNamingItsAddressAndTheAllowedOnes) {
  auto s = spec_to("192.0.2.7:80");
  auto e = input_error_of([&] { check_load_destination(s, NetworkList::loopback()); });
  EXPECT_THAT(e, StartsWith("endpoint: "));
  EXPECT_THAT(e, HasSubstr("192.0.2.7"));
  EXPECT_THAT(e, HasSubstr("--allow-load-to 127.0.0.0/8, ::1/128"));
  auto only_one = spec_to("127.0.0.2:80");
  EXPECT_THAT(input_error_of([&] {
                check_load_destination(only_one, NetworkList::parse({"127.0.0.1"}, "--allow-load-to"));
              }),
              StartsWith("endpoint: "));
}

// A target agent that announced its loopback (no --advertise, listening on a wildcard) is the
// likely cause of a loopback endpoint a lab's load agent refuses: the error says what to set.
TEST(LoadDestination, ALoopbackEndpointOutsideTheNetworksNamesAdvertise) {
  const auto lab = NetworkList::parse({"10.0.0.0/24"}, "--allow-load-to");
  auto loopback = spec_to("127.0.0.1:8080");
  EXPECT_THAT(input_error_of([&] { check_load_destination(loopback, lab); }), HasSubstr("--advertise ADDR"));
  auto elsewhere = spec_to("192.0.2.7:80");
  EXPECT_THAT(input_error_of([&] { check_load_destination(elsewhere, lab); }),
              ::testing::Not(HasSubstr("--advertise")));
}

TEST(LoadDestination, AHostHeaderNamingAnotherHostMustBeAllowedToo) {
  // An allowed forward proxy would carry the load on to the host the header names.
  auto s = spec_to("127.0.0.1:3128");
  (*s.mutable_headers())["host"] = "192.0.2.7:80";
  auto e = input_error_of([&] { check_load_destination(s, NetworkList::loopback()); });
  EXPECT_THAT(e, StartsWith("headers/host: "));
  EXPECT_THAT(e, HasSubstr("192.0.2.7"));
  (*s.mutable_headers())["host"] = "no-such-host.invalid";
  EXPECT_THAT(input_error_of([&] { check_load_destination(s, NetworkList::loopback()); }),
              StartsWith("headers/host: "));
  // The endpoint's own host, or another allowed one, is fine.
  (*s.mutable_headers())["host"] = "127.0.0.1";
  check_load_destination(s, NetworkList::loopback());
  (*s.mutable_headers())["host"] = "[::1]:8080";
  check_load_destination(s, NetworkList::loopback());
  EXPECT_EQ(s.endpoint(), "127.0.0.1:3128");
}

TEST(LoadDestination, AHostNameIsResolvedCheckedAndPinnedKeepingTheNameInTheHostHeader) {
  auto s = spec_to("localhost:8080");
  check_load_destination(s, NetworkList::loopback());
  auto ep = s.endpoint();
  EXPECT_TRUE(ep == "127.0.0.1:8080" || ep == "[::1]:8080") << ep;
  EXPECT_EQ(s.headers().at("Host"), "localhost:8080");
  auto unknown = spec_to("no-such-host.invalid:80");
  auto e = input_error_of([&] { check_load_destination(unknown, NetworkList::loopback()); });
  EXPECT_THAT(e, StartsWith("endpoint: "));
  EXPECT_THAT(e, HasSubstr("does not resolve"));
}

}  // namespace
}  // namespace loadlab::agent
