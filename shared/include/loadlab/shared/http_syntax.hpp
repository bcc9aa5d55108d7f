#pragma once
// HTTP syntax rules that every layer checks alike (scenario, agent, worker).
#include <algorithm>
#include <cctype>
#include <string_view>

namespace loadlab {

// RFC 9110 token characters: what a method or a header name may be made of.
inline bool is_http_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

inline bool has_line_break(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

}  // namespace loadlab
