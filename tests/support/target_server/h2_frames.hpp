#pragma once
// Raw HTTP/2 for the target's tests that break the rules on purpose: one frame's bytes, and an
// HPACK field (a literal without indexing, new name; names and values under 127 bytes).
#include <cstdint>
#include <string>

namespace loadlab::target::testing {

inline std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                         const std::string& payload = "") {
  std::string f;
  for (int shift : {16, 8, 0}) f += static_cast<char>((payload.size() >> shift) & 0xff);
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  for (int shift : {24, 16, 8, 0}) f += static_cast<char>((stream >> shift) & (shift == 24 ? 0x7f : 0xff));
  return f + payload;
}

inline std::string literal(const std::string& name, const std::string& value) {
  return std::string(1, '\0') + static_cast<char>(name.size()) + name + static_cast<char>(value.size()) +
         value;
}

}  // namespace loadlab::target::testing
