#pragma once
// HTTP syntax rules that every layer checks alike (scenario, agent, worker).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loadlab {

// RFC 9110 token characters: what a method or a header name may be made of.
inline bool is_http_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

inline bool has_line_break(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

// Two of `names` that name one header (header names are compared ignoring case: `Host` and
// `hOST` are one header, which a client would send twice, or send one of and check the
// other): the pair, in sorted order; nullopt when all differ.
inline std::optional<std::pair<std::string, std::string>> same_header_names(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::map<std::string, std::string> seen;  // lower case -> as given
  for (const auto& n : names) {
    std::string lower(n);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    auto [it, fresh] = seen.emplace(lower, n);
    if (!fresh) return std::make_pair(it->second, n);
  }
  return std::nullopt;
}

}  // namespace loadlab
