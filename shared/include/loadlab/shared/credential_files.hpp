#pragma once
// The files that hold credentials, the agent's (--tls-*, --token-file) and the controller's
// (lab.json's tls and token_file) alike: small regular files. A token file holds one token,
// one line without spaces; white space around it is dropped.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "loadlab/shared/limits.hpp"

namespace loadlab {

// The content of `path`; nullopt unless it is a readable regular file of at most
// `max_bytes` (a device such as /dev/zero would never end).
[[nodiscard]] inline std::optional<std::string> read_small_file(const std::filesystem::path& path,
                                                                int64_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > static_cast<uintmax_t>(max_bytes)) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// read_small_file of at most limits::kMaxCredentialFileBytes.
[[nodiscard]] inline std::optional<std::string> read_credential_file(const std::filesystem::path& path) {
  return read_small_file(path, limits::kMaxCredentialFileBytes);
}

// Why other users of this machine could read the secret at `path` (a token or a private
// key), or nullopt when only this user (and root) can: the file must be owned by this user
// or root, and readable by no one else, except by its group when that group is this user's
// own (a Kubernetes secret mounted root:fsGroup 0440 passes). Links are followed: the
// permissions that matter are the file's.
[[nodiscard]] inline std::optional<std::string> readable_by_others(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // reading it will say why
  const std::string mode = fmt::format("{:04o}", st.st_mode & 07777);
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return "is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(::geteuid()) + ") or root";
  if (st.st_mode & S_IRWXO) return std::string("can be read by every user (mode ") + mode + "): chmod 600 it";
  if ((st.st_mode & S_IRWXG) && st.st_gid != ::getegid())
    return std::string("can be read by group ") + std::to_string(st.st_gid) + " (mode " + mode +
           "), not this user's own: chmod 600 it";
  return std::nullopt;
}

// The token `text` holds; nullopt when it holds none or more than one word.
inline std::optional<std::string> token_of(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  if (text.find_first_of(kSpace) != std::string_view::npos) return std::nullopt;
  return std::string(text);
}

}  // namespace loadlab
