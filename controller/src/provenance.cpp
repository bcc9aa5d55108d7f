#include "loadlab/controller/provenance.hpp"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace loadlab::controller {

namespace {

// Output of a command (no shell quoting issues: arguments are single-quoted paths).
std::string capture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  if (pclose(p) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::array<char, 65536> buf{};
  while (in.read(buf.data(), buf.size()) || in.gcount() > 0)
    EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(in.gcount()));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

nlohmann::json file_provenance(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto abs = fs::absolute(path, ec);
  auto dir = abs.parent_path().string();
  nlohmann::json j = {{"path", abs.string()}, {"sha256", sha256_file(path)}, {"git", nullptr}};
  std::string commit = capture("git -C " + quote(dir) + " rev-parse HEAD 2>/dev/null");
  if (!commit.empty()) {
    std::string status = capture("git -C " + quote(dir) + " status --porcelain -- " +
                                 quote(abs.filename().string()) + " 2>/dev/null; echo .");
    std::string tree =
        capture("git -C " + quote(dir) + " status --porcelain --untracked-files=no 2>/dev/null; echo .");
    j["git"] = {{"commit", commit},
                {"dirty", status != "."},      // the scenario file differs from the commit
                {"tree_dirty", tree != "."}};  // some tracked file of the work tree does
  }
  return j;
}

}  // namespace loadlab::controller
