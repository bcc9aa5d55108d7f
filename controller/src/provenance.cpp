#include "loadlab/controller/provenance.hpp"

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
