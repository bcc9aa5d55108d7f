#pragma once
// The format of a token file, the agent's (--token-file) and the controller's (lab.json
// token_file) alike: one token, one line without spaces; white space around it is dropped.
#include <optional>
#include <string>
#include <string_view>

namespace loadlab {

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
