#pragma once
// The secure programs' flags (secure_flags.cpp, h3_flags.cpp). Internal.
#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "target_flags.hpp"
#include "tls_context.hpp"

namespace loadlab::target {

// The certificate and key of --tls-cert/--tls-key (or a new self-signed pair, its certificate
// written where --tls-cert-out says) and the OpenSSL context made of them. Throws InputError
// naming the flag, or EnvironmentError when a certificate cannot be made.
struct TlsParts {
  TlsCredentials credentials;
  std::shared_ptr<boost::asio::ssl::context> context;
};
[[nodiscard]] TlsParts tls_parts(const TargetFlags& flags);

}  // namespace loadlab::target
