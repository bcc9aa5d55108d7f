#pragma once
// The names of loadlab.v1.Protocol, as scenarios, results and the load worker's CSV write
// them ("http1", "https", "h2", "h2c", "h3"), and which of them go over TLS.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadlab/v1/agent.pb.h"

namespace loadlab::proto {

// Every protocol, in the order docs list them (PROTOCOL_UNSPECIFIED excluded).
const std::vector<v1::Protocol>& all_protocols();
// "http1" for PROTOCOL_HTTP1 and PROTOCOL_UNSPECIFIED (a spec that names none).
std::string_view protocol_name(v1::Protocol p);
std::optional<v1::Protocol> protocol_from_name(std::string_view name);
// "http1, https, h2, h2c, h3": what an error names as allowed.
std::string protocol_names(const std::vector<v1::Protocol>& protocols = all_protocols());
bool uses_tls(v1::Protocol p);
// Whether several requests may be in flight on one connection (HTTP/2 and HTTP/3 streams).
bool multiplexes(v1::Protocol p);
// The TLS versions a client may force ("1.2", "1.3"); "" means the default, "1.3".
inline constexpr std::string_view kDefaultTlsVersion = "1.3";
bool is_tls_version(std::string_view v);
// How an open loop's send times fall (LoadSpec.arrivals): "uniform" (the default, also "")
// or "poisson".
inline constexpr std::string_view kUniformArrivals = "uniform";
inline constexpr std::string_view kPoissonArrivals = "poisson";
inline bool is_arrivals(std::string_view v) { return v == kUniformArrivals || v == kPoissonArrivals; }

}  // namespace loadlab::proto
