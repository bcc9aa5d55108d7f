#pragma once
// Reading a --ca file's PEM text: once where the flag is validated (a file without a
// certificate is refused with exit status 2) and once into the TLS context.
#include <openssl/x509_vfy.h>

#include <string_view>

namespace loadlab::load {

// The certificates the PEM text `pem` holds, each added to `store` when one is given.
[[nodiscard]] int read_pem_certificates(std::string_view pem, X509_STORE* store = nullptr);

}  // namespace loadlab::load
