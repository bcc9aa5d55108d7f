#pragma once
// A certificate made in the test (no files in the tree, nothing to expire) for the load
// worker's TLS tests.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace loadlab::load::testing {

// A self-signed certificate (EC P-256, one day) for `dns` names and `ips`, in PEM.
struct SelfSignedCertificate {
  std::string certificate_pem;
  std::string key_pem;

  SelfSignedCertificate(const std::vector<std::string>& dns, const std::vector<std::string>& ips) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    const std::string cn = dns.empty() ? ips.front() : dns.front();
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()),
                               -1, -1, 0);
    X509_set_issuer_name(x, name);
    std::string san;
    for (const auto& d : dns) san += (san.empty() ? "DNS:" : ",DNS:") + d;
    for (const auto& i : ips) san += (san.empty() ? "IP:" : ",IP:") + i;
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    const std::pair<int, std::string> extensions[] = {{NID_subject_alt_name, san},
                                                      {NID_basic_constraints, "critical,CA:TRUE"}};
    for (const auto& [nid, value] : extensions) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
      X509_add_ext(x, ext, -1);
      X509_EXTENSION_free(ext);
    }
    X509_sign(x, key, EVP_sha256());
    certificate_pem = pem([&](BIO* b) { PEM_write_bio_X509(b, x); });
    key_pem = pem([&](BIO* b) { PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); });
    X509_free(x);
    EVP_PKEY_free(key);
  }

  // Writes the certificate to `path` (for --ca); returns `path`.
  std::string write_certificate(const std::string& path) const {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fwrite(certificate_pem.data(), 1, certificate_pem.size(), f);
    std::fclose(f);
    return path;
  }

 private:
  template <class Write>
  static std::string pem(Write write) {
    BIO* b = BIO_new(BIO_s_mem());
    write(b);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(b);
    return out;
  }
};

}  // namespace loadlab::load::testing
