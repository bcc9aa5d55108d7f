#include "loadlab/shared/sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <fstream>

namespace loadlab {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(std::string_view data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size());
}

bool Sha256::update_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::array<char, 65536> buf{};
  while (in.read(buf.data(), buf.size()) || in.gcount() > 0)
    update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  return true;
}

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += digits[md[i] >> 4];
    out += digits[md[i] & 15];
  }
  return out;
}

std::string sha256_file(const std::string& path) {
  Sha256 h;
  return h.update_file(path) ? h.hex() : "";
}

std::string sha256_text(std::string_view text) {
  Sha256 h;
  h.update(text);
  return h.hex();
}

}  // namespace loadlab
