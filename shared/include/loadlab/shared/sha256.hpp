#pragma once
// SHA-256 in lower-case hex (OpenSSL's EVP), for files and text whose identity results keep:
// a scenario file's, a target build's.
#include <string>
#include <string_view>

namespace loadlab {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view data);
  // Adds a file's bytes; false (nothing added) when it cannot be read.
  bool update_file(const std::string& path);
  std::string hex();  // ends the digest

 private:
  void* ctx_;
};

std::string sha256_file(const std::string& path);  // hex; "" if unreadable
std::string sha256_text(std::string_view text);

}  // namespace loadlab
