#include "pem_certificates.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <memory>

namespace loadlab::load {

int read_pem_certificates(std::string_view pem, X509_STORE* store) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                &BIO_free);
  if (!bio) return 0;
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (!store || X509_STORE_add_cert(store, cert) == 1) ++count;
    X509_free(cert);
  }
  ERR_clear_error();  // the read past the last certificate leaves "no start line" behind
  return count;
}

}  // namespace loadlab::load
