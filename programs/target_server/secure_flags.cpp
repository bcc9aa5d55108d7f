// The TLS flags (--tls, --tls-cert, --tls-key, --tls-cert-out) into the server's SecureTransport:
// loadlab-target-secure's, and the TLS half of loadlab-target-h3's (h3_flags.cpp).
#include "secure_flags.hpp"

#include <chrono>
#include <fstream>
#include <string>

#include "loadlab/shared/credential_files.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/self_signed_cert.hpp"
#include "target_flags.hpp"
#include "tls_context.hpp"
#include "tls_transport.hpp"

namespace loadlab::target {

namespace {

std::string read_pem(const char* flag, const std::string& path) {
  auto text = read_credential_file(path);
  if (!text)
    throw InputError(flag, "cannot read '" + path + "': expected a readable regular file of at most " +
                               std::to_string(limits::kMaxCredentialFileBytes) + " bytes");
  return *text;
}

// The certificate and key of --tls-cert/--tls-key, or a new self-signed pair (whose certificate
// --tls-cert-out writes).
TlsCredentials tls_credentials(const TargetFlags& flags) {
  if (flags.tls_cert.empty() != flags.tls_key.empty())
    throw flags.tls_cert.empty() ? InputError("--tls-cert", "required with --tls-key")
                                 : InputError("--tls-key", "required with --tls-cert");
  if (!flags.tls_cert.empty()) {
    if (!flags.tls_cert_out.empty())
      throw InputError("--tls-cert-out",
                       "only for a generated certificate (--tls without --tls-cert and --tls-key)");
    return TlsCredentials{read_pem("--tls-cert", flags.tls_cert), read_pem("--tls-key", flags.tls_key)};
  }
  std::string error;
  auto generated = make_self_signed_cert(std::chrono::system_clock::now(), error);
  if (!generated) throw EnvironmentError("cannot make a TLS certificate: " + error);
  component_logger("target")->info(
      "tls: generated a self-signed certificate for localhost, 127.0.0.1 and ::1, valid 30 days, "
      "SHA-256 fingerprint {}",
      generated->sha256_fingerprint);
  if (!flags.tls_cert_out.empty()) {
    std::ofstream out(flags.tls_cert_out, std::ios::binary | std::ios::trunc);
    out << generated->credentials.cert_pem;
    out.close();
    if (!out) throw InputError("--tls-cert-out", "cannot write '" + flags.tls_cert_out + "'");
  }
  return std::move(generated->credentials);
}

}  // namespace

TlsParts tls_parts(const TargetFlags& flags) {
  TlsParts parts{tls_credentials(flags), nullptr};
  auto result = make_tls_context(parts.credentials);
  if (!result.context) {
    const bool cert = result.bad == TlsContextResult::Bad::cert;
    const std::string& path = cert ? flags.tls_cert : flags.tls_key;
    if (path.empty()) throw EnvironmentError("cannot make a TLS certificate: " + result.error);  // ours
    throw InputError(cert ? "--tls-cert" : "--tls-key", "'" + path + "': " + result.error);
  }
  parts.context = std::move(result.context);
  return parts;
}

void add_tls_options(const TargetFlags& flags, ServerOptions& options) {
  options.secure = std::make_shared<TlsTransport>(tls_parts(flags).context);
}

}  // namespace loadlab::target
