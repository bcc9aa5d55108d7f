// Fuzz target: loadlab-load's response parsing, driven as Connection drives it (a fresh
// ResponseParser per response, no body limit, Beast's default header limit, fed from the
// connection's buffer; at the end of the input the peer closes, which completes a
// close-delimited body). The bytes are read as answers to GETs, whole and in small reads,
// and as answers to HEADs; how the reads fall must not change where each response ends. And
// Connection's one-pass read of a whole response (complete_response.hpp) takes only what
// Beast's parser reads the same: status, size and keep-alive.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>

#include "complete_response.hpp"
#include "http_stream.hpp"
#include "response_parser.hpp"

namespace {

using loadlab::load::ResponseParser;

// The worker records each response with its status, which it counts in a table of 100..999.
void check_status(const ResponseParser& p) {
  if (p.status() < 100 || p.status() > 999) std::abort();
}

loadlab::fuzz::StreamOutcome parse_responses(std::string_view bytes, std::size_t read_size, bool head) {
  std::optional<ResponseParser> parser;
  auto out = loadlab::fuzz::parse_stream(
      bytes, read_size, parser,
      [&](ResponseParser& p) {
        p.body_limit(std::numeric_limits<std::uint64_t>::max());
        if (head) p.skip(true);
      },
      check_status);
  // The peer closes: a started response either completes (close-delimited body) or is cut.
  if (!out.error && parser->got_some()) {
    boost::beast::error_code ec;
    parser->put_eof(ec);
    out.pending = false;
    if (ec) {
      out.error = true;
    } else {
      check_status(*parser);
      ++out.messages;
      out.framed = bytes.size();
    }
  }
  return out;
}

void check_complete_response(std::string_view bytes) {
  auto fast = loadlab::load::complete_response(bytes);
  if (!fast) return;
  ResponseParser p;
  p.eager(true);
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  boost::beast::error_code ec;
  const std::size_t used = p.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  if (ec || !p.is_done() || used != fast->size || p.status() != fast->status ||
      p.keep_alive() != fast->keep_alive)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!loadlab::fuzz::same_framing(parse_responses(bytes, size + 1, false),
                                   parse_responses(bytes, 1 + size % 7, false)))
    std::abort();
  parse_responses(bytes, size + 1, true);
  check_complete_response(bytes);
  return 0;
}
