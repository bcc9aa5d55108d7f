#pragma once
// The common answer of a benchmark, read in one pass: a whole HTTP/1.1 response with a
// Content-Length body already in the connection's buffer. Beast's basic_parser validates each
// header byte through its own tables and calls back per field: 1 660 of the worker's 3 550
// instructions per request (callgrind, 10 connections to loadlab-target), where this pass takes
// a few hundred. It takes only what it can decide alone and leaves everything else to
// Beast's parser (ResponseParser), which stays the judge of what is valid HTTP: another
// version, a 1xx, 204 or 304 status, chunked or close-delimited bodies, a field it does not
// know how to read (a Connection other than close or keep-alive, a second Content-Length,
// obs-fold, bytes outside printable ASCII), a header near Beast's limit, or a response not
// all in yet. For what it takes, Beast's parser gives the same status, size and keep-alive
// (the differential check in tests/fuzz/response_fuzz.cpp and complete_response_test.cpp).
// Internal to loadlab_load.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace loadlab::load {

struct CompleteResponse {
  int status = 0;          // 200..999, not 204 or 304
  std::size_t size = 0;    // the header block and the body
  bool keep_alive = true;  // no "Connection: close"
  std::size_t header = 0;  // the header block's size (start line to the empty line)
};

namespace complete_response_detail {

// Below Beast's default header_limit (8 KiB): a header near it is Beast's to refuse.
inline constexpr std::size_t kHeaderLimit = 8000;

inline bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

// Character classes, one table lookup per byte: kText, what a reason phrase or field value
// may hold here (HTAB, SP, visible ASCII); kToken, RFC 9110 tchar.
inline constexpr unsigned char kText = 1, kToken = 2;
struct Classes {
  unsigned char of[256] = {};
  constexpr Classes() {
    for (int c = 0x20; c < 0x7f; ++c) of[c] = kText;
    of['\t'] = kText;
    for (int c = '0'; c <= '9'; ++c) of[c] |= kToken;
    for (int c = 'a'; c <= 'z'; ++c) of[c] |= kToken;
    for (int c = 'A'; c <= 'Z'; ++c) of[c] |= kToken;
    for (unsigned char c : {'!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~'})
      of[c] |= kToken;
  }
};
inline constexpr Classes kClasses;
inline bool is(unsigned char c, unsigned char cls) { return (kClasses.of[c] & cls) != 0; }

// `s` equals the lower-case `lower`, ignoring ASCII case (`lower` holds letters and '-').
inline bool iequals(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) | 0x20) != static_cast<unsigned char>(lower[i])) return false;
  return true;
}

}  // namespace complete_response_detail

// The response at the start of `bytes` when it is one this pass takes (see above); nullopt
// otherwise, and Beast's parser reads it.
inline std::optional<CompleteResponse> complete_response(std::string_view bytes) {
  using namespace complete_response_detail;
  constexpr std::string_view kVersion = "HTTP/1.1 ";
  const char* const begin = bytes.data();
  const char* const end = begin + (bytes.size() < kHeaderLimit ? bytes.size() : kHeaderLimit);
  if (end - begin < 17 || bytes.compare(0, kVersion.size(), kVersion) != 0) return std::nullopt;
  const auto d = [&](std::size_t i) { return static_cast<unsigned char>(begin[i]); };
  if (!is_digit(d(9)) || !is_digit(d(10)) || !is_digit(d(11)) || d(12) != ' ') return std::nullopt;
  const int status = (d(9) - '0') * 100 + (d(10) - '0') * 10 + (d(11) - '0');
  if (status < 200 || status == 204 || status == 304) return std::nullopt;
  const char* p = begin + 13;
  while (p < end && is(static_cast<unsigned char>(*p), kText)) ++p;  // the reason phrase
  if (end - p < 2 || p[0] != '\r' || p[1] != '\n') return std::nullopt;
  p += 2;
  std::optional<std::uint64_t> length;
  bool keep_alive = true;
  for (;;) {
    if (end - p < 2) return std::nullopt;
    if (p[0] == '\r') {
      if (p[1] != '\n') return std::nullopt;
      p += 2;
      break;
    }
    const char* const name = p;
    while (p < end && is(static_cast<unsigned char>(*p), kToken)) ++p;
    if (p == name || p == end || *p != ':') return std::nullopt;
    const std::string_view field(name, static_cast<std::size_t>(p - name));
    ++p;
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    const char* const value = p;
    while (p < end && is(static_cast<unsigned char>(*p), kText)) ++p;
    if (end - p < 2 || p[0] != '\r' || p[1] != '\n') return std::nullopt;
    const char* value_end = p;
    while (value_end > value && (value_end[-1] == ' ' || value_end[-1] == '\t')) --value_end;
    const std::string_view v(value, static_cast<std::size_t>(value_end - value));
    p += 2;
    if (iequals(field, "content-length")) {
      if (length || v.empty() || v.size() > 18) return std::nullopt;
      std::uint64_t n = 0;
      for (char c : v) {
        if (!is_digit(static_cast<unsigned char>(c))) return std::nullopt;
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
      }
      length = n;
    } else if (iequals(field, "connection")) {
      if (iequals(v, "close"))
        keep_alive = false;
      else if (!iequals(v, "keep-alive"))
        return std::nullopt;
    } else if (iequals(field, "transfer-encoding") || iequals(field, "upgrade")) {
      return std::nullopt;
    }
  }
  if (!length) return std::nullopt;
  const auto header = static_cast<std::size_t>(p - begin);
  if (bytes.size() - header < *length) return std::nullopt;
  return CompleteResponse{status, header + static_cast<std::size_t>(*length), keep_alive, header};
}

// complete_response() with a memory of the header block it last took: a server's answers to
// one request are the same bytes but for a Date field that changes once a second, and the
// same bytes are the same response, so they cost a comparison instead of the pass. One per
// worker thread.
class CompleteResponseReader {
 public:
  std::optional<CompleteResponse> read(std::string_view bytes) {
    if (!header_.empty() && bytes.size() >= header_.size() &&
        std::memcmp(bytes.data(), header_.data(), header_.size()) == 0) {
      if (bytes.size() - header_.size() < last_.size - last_.header) return std::nullopt;  // not all in
      return last_;
    }
    auto r = complete_response(bytes);
    if (r) {
      header_.assign(bytes.data(), r->header);
      last_ = *r;
    }
    return r;
  }

 private:
  std::string header_;
  CompleteResponse last_;
};

}  // namespace loadlab::load
