#pragma once
// One header field for nghttp2 (nghttp2_nv) or nghttp3 (nghttp3_nv), whose field structs have
// the same members: the name and value point into `name` and `value`, which must outlive the
// library's use of them unless `flags` lets it copy them.
#include <cstdint>
#include <string_view>

namespace loadlab::shared {

template <class Nv>
Nv header_nv(std::string_view name, std::string_view value, std::uint8_t flags) {
  Nv nv{};
  nv.name = reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data()));
  nv.value = reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data()));
  nv.namelen = name.size();
  nv.valuelen = value.size();
  nv.flags = flags;
  return nv;
}

}  // namespace loadlab::shared
