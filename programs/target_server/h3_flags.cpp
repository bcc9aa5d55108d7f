// loadlab-target-h3's flags: the TLS ones (secure_flags.cpp) and --h3, which serves HTTP/3 on the
// same port with QUIC's own TLS context (GnuTLS, the same certificate).
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/input_error.hpp"
#include "quic_tls.hpp"
#include "secure_flags.hpp"
#include "tls_quic_transport.hpp"

namespace loadlab::target {

void add_h3_options(const TargetFlags& flags, ServerOptions& options) {
  auto parts = tls_parts(flags);
  std::string error;
  auto quic = QuicTlsContext::make(parts.credentials, error);
  if (!quic) {
    if (flags.tls_cert.empty()) throw EnvironmentError("cannot make a TLS certificate: " + error);
    throw InputError("--tls-cert", error);
  }
  options.secure = make_tls_quic_transport(std::move(parts.context), std::move(quic));
}

}  // namespace loadlab::target
