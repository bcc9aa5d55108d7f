#pragma once
// Where this agent's load may go: the networks its operator allows (--allow-load-to), and
// the check of a LoadSpec against them before a worker is spawned. A controller credential
// in the wrong hands must not turn the lab's load agents against a third party.
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>
#include <string>
#include <variant>
#include <vector>

#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

class NetworkList {
 public:
  // Loopback only: 127.0.0.0/8 and ::1/128 (the default).
  static NetworkList loopback();
  // CIDRs ("10.1.0.0/16", "::1/128"; a bare address is a /32 or /128). Throws InputError
  // naming `flag` and the bad entry.
  [[nodiscard]] static NetworkList parse(const std::vector<std::string>& cidrs, const std::string& flag);

  bool contains(const boost::asio::ip::address& a) const;
  std::string to_string() const;  // "127.0.0.0/8, ::1/128"

 private:
  std::vector<std::variant<boost::asio::ip::network_v4, boost::asio::ip::network_v6>> nets_;
};

// Resolves `host` (an address literal or a name) to all its addresses; empty when it does
// not resolve.
[[nodiscard]] std::vector<boost::asio::ip::address> resolve_host(const std::string& host);

// Throws InputError (path "endpoint" or "headers/Host") when the load of `spec` could reach
// an address outside `allowed`: the endpoint's host, or a Host header naming another host
// (a proxy in the allowed range would forward to it). A host name is resolved here and
// every address it has must be allowed; the endpoint is then pinned to the checked address
// (and the name kept in the Host header), so a second lookup by the worker cannot land
// elsewhere.
void check_load_destination(v1::LoadSpec& spec, const NetworkList& allowed);

}  // namespace loadlab::agent
