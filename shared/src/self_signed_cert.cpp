#include "loadlab/shared/self_signed_cert.hpp"

#include <fmt/ranges.h>  // fmt::join
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace loadlab {

namespace {

constexpr const char* kCommonName = "localhost";
constexpr const char* kSubjectAltName = "DNS:localhost,IP:127.0.0.1,IP:::1";
constexpr long kValidBeforeNowS = 3600;
constexpr long kValidDays = 30;

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

std::string openssl_error(const char* what) {
  std::string text = what;
  if (const char* reason = ERR_reason_error_string(ERR_get_error())) text += std::string(": ") + reason;
  ERR_clear_error();
  return text;
}

bool add_extension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A random positive 127-bit serial (RFC 5280 §4.1.2.2: at most 20 octets, positive).
bool set_random_serial(X509* cert) {
  BignumPtr serial(BN_new());
  return serial && BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
         BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert)) != nullptr;
}

// Subject, issuer, validity and extensions; not yet signed.
bool fill_certificate(X509* cert, EVP_PKEY* key, std::chrono::system_clock::time_point now) {
  time_t t = std::chrono::system_clock::to_time_t(now);
  X509_NAME* name = X509_get_subject_name(cert);
  return X509_set_version(cert, 2) == 1 && set_random_serial(cert) &&
         X509_time_adj_ex(X509_getm_notBefore(cert), 0, -kValidBeforeNowS, &t) != nullptr &&
         X509_time_adj_ex(X509_getm_notAfter(cert), static_cast<int>(kValidDays), 0, &t) != nullptr &&
         X509_set_pubkey(cert, key) == 1 &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    reinterpret_cast<const unsigned char*>(kCommonName), -1, -1, 0) == 1 &&
         X509_set_issuer_name(cert, name) == 1 &&
         // A leaf, not a CA; no keyUsage, so OpenSSL still treats it as self-signed when a
         // client trusts it directly (--ca of the file --tls-cert-out wrote).
         add_extension(cert, NID_basic_constraints, "critical,CA:FALSE") &&
         add_extension(cert, NID_ext_key_usage, "serverAuth") &&
         add_extension(cert, NID_subject_key_identifier, "hash") &&
         add_extension(cert, NID_subject_alt_name, kSubjectAltName);
}

template <class Write>
std::optional<std::string> to_pem(Write write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) return std::nullopt;
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

std::optional<std::string> fingerprint(X509* cert) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (X509_digest(cert, EVP_sha256(), digest, &size) != 1) return std::nullopt;
  return fmt::format("{:02X}", fmt::join(digest, digest + size, ":"));
}

}  // namespace

std::optional<SelfSignedCert> make_self_signed_cert(std::chrono::system_clock::time_point now,
                                                    std::string& error) {
  ERR_clear_error();
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return error = openssl_error("generating a P-256 key"), std::nullopt;
  X509Ptr cert(X509_new());
  if (!cert || !fill_certificate(cert.get(), key.get(), now))
    return error = openssl_error("building the certificate"), std::nullopt;
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0)
    return error = openssl_error("signing the certificate"), std::nullopt;
  auto cert_pem = to_pem([&](BIO* bio) { return PEM_write_bio_X509(bio, cert.get()); });
  auto key_pem = to_pem([&](BIO* bio) {
    return PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  auto sha256 = fingerprint(cert.get());
  if (!cert_pem || !key_pem || !sha256)
    return error = openssl_error("encoding the certificate"), std::nullopt;
  return SelfSignedCert{{std::move(*cert_pem), std::move(*key_pem)}, std::move(*sha256)};
}

}  // namespace loadlab
