#include "loadlab/agent/load_destinations.hpp"

#include <netdb.h>
#include <strings.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>

#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/input_error.hpp"

namespace loadlab::agent {

namespace ip = boost::asio::ip;

namespace {

// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) reach the IPv4 host: judge them as such.
ip::address canonical(const ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  return a;
}

// "host", "host:port", "[v6]" or "[v6]:port" → host without brackets.
std::string host_of_authority(const std::string& authority) {
  if (auto ep = parse_endpoint(authority)) return ep->host;
  if (authority.size() >= 2 && authority.front() == '[' && authority.back() == ']')
    return authority.substr(1, authority.size() - 2);
  return authority;
}

// Every address `host` resolves to is in `allowed`; throws InputError at `path` otherwise.
std::vector<ip::address> require_allowed(const std::string& host, const NetworkList& allowed,
                                         const std::string& path) {
  auto addrs = resolve_host(host);
  if (addrs.empty()) throw InputError(path, "\"" + host + "\" does not resolve to an address");
  for (auto& a : addrs)
    if (!allowed.contains(a))
      throw InputError(
          path, "\"" + host + "\" is " + a.to_string() +
                    ", outside the networks this agent may load (--allow-load-to " + allowed.to_string() +
                    ")" +
                    (a.is_loopback() ? ": a target agent on another machine serves on its loopback "
                                       "unless it listens on its lab address or is given "
                                       "--advertise ADDR"
                                     : ""));
  return addrs;
}

}  // namespace

NetworkList NetworkList::loopback() { return parse({"127.0.0.0/8", "::1/128"}, "--allow-load-to"); }

NetworkList NetworkList::parse(const std::vector<std::string>& cidrs, const std::string& flag) {
  NetworkList list;
  for (const auto& c : cidrs) {
    const auto slash = c.find('/');
    boost::system::error_code ec;
    const auto addr = canonical(ip::make_address(c.substr(0, slash), ec));
    int prefix = addr.is_v4() ? 32 : 128;
    if (!ec && slash != std::string::npos) {
      const std::string bits = c.substr(slash + 1);
      if (bits.empty() || bits.size() > 3 || bits.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(bits) > prefix)
        ec = boost::asio::error::invalid_argument;
      else
        prefix = std::stoi(bits);
    }
    if (ec)
      throw InputError(flag,
                       "must be CIDRs such as 10.1.0.0/16 or ::1/128 (or bare addresses), got \"" + c + "\"");
    // The network of the address's first `prefix` bits: "10.1.2.3/16" is 10.1.0.0/16.
    if (addr.is_v4())
      list.nets_.emplace_back(
          ip::make_network_v4(addr.to_v4(), static_cast<unsigned short>(prefix)).canonical());
    else
      list.nets_.emplace_back(
          ip::make_network_v6(addr.to_v6(), static_cast<unsigned short>(prefix)).canonical());
  }
  return list;
}

bool NetworkList::contains(const ip::address& address) const {
  const auto a = canonical(address);
  for (const auto& n : nets_) {
    if (a.is_v4() && std::holds_alternative<ip::network_v4>(n)) {
      const auto& net = std::get<ip::network_v4>(n);
      if ((a.to_v4().to_uint() & net.netmask().to_uint()) == net.network().to_uint()) return true;
    } else if (a.is_v6() && std::holds_alternative<ip::network_v6>(n)) {
      const auto& net = std::get<ip::network_v6>(n);
      if (ip::make_network_v6(a.to_v6(), net.prefix_length()).canonical() == net) return true;
    }
  }
  return false;
}

std::string NetworkList::to_string() const {
  std::string out;
  for (const auto& n : nets_) {
    if (!out.empty()) out += ", ";
    out += std::visit([](const auto& net) { return net.to_string(); }, n);
  }
  return out;
}

std::vector<ip::address> resolve_host(const std::string& host) {
  boost::system::error_code ec;
  auto literal = ip::make_address(host, ec);
  if (!ec) return {literal};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return {};
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(res, freeaddrinfo);
  std::vector<ip::address> out;
  for (auto* r = res; r; r = r->ai_next) {
    if (r->ai_family == AF_INET)
      out.emplace_back(
          ip::address_v4(ntohl(reinterpret_cast<const sockaddr_in*>(r->ai_addr)->sin_addr.s_addr)));
    else if (r->ai_family == AF_INET6) {
      ip::address_v6::bytes_type b;
      std::copy_n(reinterpret_cast<const sockaddr_in6*>(r->ai_addr)->sin6_addr.s6_addr, 16, b.begin());
      out.emplace_back(ip::address_v6(b));
    }
  }
  return out;
}

void check_load_destination(v1::LoadSpec& spec, const NetworkList& allowed) {
  const auto ep = parse_endpoint(spec.endpoint());
  if (!ep || ep->host.empty() || ep->port == 0)
    throw InputError("endpoint",
                     "must be HOST:PORT with a port in 1..65535, got \"" + spec.endpoint() + "\"");
  const auto addrs = require_allowed(ep->host, allowed, "endpoint");
  auto& headers = *spec.mutable_headers();
  // Every Host a client would send is checked (validate_spec refuses two names of one
  // header, but a spec may come from anywhere): an allowed forward proxy would carry the
  // load on to the host it names.
  bool has_host = false;
  for (const auto& [name, value] : headers) {
    if (strcasecmp(name.c_str(), "host") != 0) continue;
    has_host = true;
    const std::string named = host_of_authority(value);
    if (strcasecmp(named.c_str(), ep->host.c_str()) != 0) require_allowed(named, allowed, "headers/" + name);
  }
  boost::system::error_code ec;
  ip::make_address(ep->host, ec);
  if (!ec) return;  // an address literal: nothing to pin
  // A name: the worker connects to the address checked here, and the server still sees the
  // name the controller gave.
  if (!has_host) headers["Host"] = spec.endpoint();
  spec.set_endpoint(Endpoint{addrs.front().to_string(), ep->port}.to_string());
}

}  // namespace loadlab::agent
