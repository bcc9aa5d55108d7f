#include "loadlab/proto/protocols.hpp"

namespace loadlab::proto {

namespace {

struct Named {
  v1::Protocol protocol;
  std::string_view name;
};

constexpr Named kNames[] = {
    {v1::PROTOCOL_HTTP1, "http1"}, {v1::PROTOCOL_HTTPS, "https"}, {v1::PROTOCOL_H2, "h2"},
    {v1::PROTOCOL_H2C, "h2c"},     {v1::PROTOCOL_H3, "h3"},
};

}  // namespace

const std::vector<v1::Protocol>& all_protocols() {
  static const std::vector<v1::Protocol> all = [] {
    std::vector<v1::Protocol> out;
    for (auto& n : kNames) out.push_back(n.protocol);
    return out;
  }();
  return all;
}

std::string_view protocol_name(v1::Protocol p) {
  for (auto& n : kNames)
    if (n.protocol == p) return n.name;
  return "http1";  // PROTOCOL_UNSPECIFIED
}

std::optional<v1::Protocol> protocol_from_name(std::string_view name) {
  for (auto& n : kNames)
    if (n.name == name) return n.protocol;
  return std::nullopt;
}

std::string protocol_names(const std::vector<v1::Protocol>& protocols) {
  std::string out;
  for (auto p : protocols) out += (out.empty() ? "" : ", ") + std::string(protocol_name(p));
  return out;
}

bool uses_tls(v1::Protocol p) {
  return p == v1::PROTOCOL_HTTPS || p == v1::PROTOCOL_H2 || p == v1::PROTOCOL_H3;
}

bool multiplexes(v1::Protocol p) {
  return p == v1::PROTOCOL_H2 || p == v1::PROTOCOL_H2C || p == v1::PROTOCOL_H3;
}

bool is_tls_version(std::string_view v) { return v == "1.2" || v == "1.3"; }

}  // namespace loadlab::proto
