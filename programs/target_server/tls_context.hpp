#pragma once
// The TLS side of the target: one server context per process, shared by every io thread
// (OpenSSL locks what it shares). TLS 1.2 and 1.3; ALPN from kAlpnProtocols; resumption by
// session tickets (TLS 1.2 and 1.3) and the server session cache (TLS 1.2 session ids), whose
// ticket keys OpenSSL makes once per context, so a ticket stays good for the process lifetime.
#include <array>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "loadlab/shared/self_signed_cert.hpp"

namespace loadlab::target {

// The application protocols offered over TLS, in the server's order of preference: a client
// offering h2 gets an H2Session, one offering only http/1.1 (or no ALPN at all) HTTP/1.1.
inline constexpr std::string_view kAlpnH2 = "h2";
inline constexpr std::array<std::string_view, 2> kAlpnProtocols = {kAlpnH2, "http/1.1"};

using loadlab::TlsCredentials;  // PEM text: a certificate (chain, leaf first) and its key

struct TlsContextResult {
  enum class Bad { none, cert, key };
  std::shared_ptr<boost::asio::ssl::context> context;  // null when `bad` says which part failed
  Bad bad = Bad::none;
  std::string error;
};

// Any thread, at start-up.
[[nodiscard]] TlsContextResult make_tls_context(const TlsCredentials& credentials);

}  // namespace loadlab::target
