#pragma once
// A throwaway certificate for `--tls` without files (demos, tests): an ECDSA P-256 key and a
// self-signed X.509 v3 certificate for localhost, 127.0.0.1 and ::1, valid from an hour ago
// (clock skew) for 30 days. Made in memory at start; the key never touches the disk.
#include <chrono>
#include <optional>
#include <string>

namespace loadlab {

// PEM text: a certificate (chain, leaf first) and its private key.
struct TlsCredentials {
  std::string cert_pem;
  std::string key_pem;
};

struct SelfSignedCert {
  TlsCredentials credentials;
  std::string sha256_fingerprint;  // of the DER certificate, "AB:CD:..." as `openssl x509 -fingerprint`
};

// Any thread. nullopt (with `error` set) only when OpenSSL fails.
[[nodiscard]] std::optional<SelfSignedCert> make_self_signed_cert(std::chrono::system_clock::time_point now,
                                                                  std::string& error);

}  // namespace loadlab
