#pragma once
// The files that hold credentials, the agent's (--tls-*, --token-file) and the controller's
// (lab.json's tls and token_file) alike: small regular files. A token file holds one token,
// one line without spaces; white space around it is dropped.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "loadlab/shared/limits.hpp"

namespace loadlab {

// The content of `path`; nullopt unless it is a readable regular file of at most
// limits::kMaxCredentialFileBytes (a device such as /dev/zero would never end).
inline std::optional<std::string> read_credential_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > static_cast<uintmax_t>(limits::kMaxCredentialFileBytes)) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
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
