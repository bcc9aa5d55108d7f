// Fuzz target: loadlab-target's request parsing, driven as Session drives it (a fresh
// RequestParser per request with the server's default limits, eager, fed from the
// connection's buffer so pipelined requests follow each other). The bytes are fed whole and
// again in small reads; how the reads fall must not change where each request ends, or a
// request could be framed two ways.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "http_stream.hpp"
#include "request_parser.hpp"
#include "session_env.hpp"

namespace {

using loadlab::target::RequestParser;

loadlab::fuzz::StreamOutcome parse_requests(std::string_view bytes, std::size_t read_size) {
  const loadlab::target::SessionEnv defaults;
  std::optional<RequestParser> parser;
  return loadlab::fuzz::parse_stream(
      bytes, read_size, parser,
      [&](RequestParser& p) {
        p.header_limit(defaults.header_limit);
        p.body_limit(defaults.body_limit);
        p.eager(true);
      },
      [](RequestParser&) {});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!loadlab::fuzz::same_framing(parse_requests(bytes, size + 1), parse_requests(bytes, 1 + size % 7)))
    std::abort();
  return 0;
}
