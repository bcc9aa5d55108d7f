#pragma once
// The read loop the target's Session and the load generator's Connection share: bytes arrive
// in reads of some size, are appended to the connection's buffer and fed to the message's
// parser; a finished message starts a fresh parser on the bytes left (pipelining).
#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string_view>

namespace loadlab::fuzz {

struct StreamOutcome {
  int messages = 0;        // parsed to their end
  std::size_t framed = 0;  // bytes those messages took
  bool error = false;      // the stream ended in a parse error (the connection is closed)
  bool pending = false;    // no error, and the bytes ended inside a message
};

// Whether two reads of one stream framed it alike: the same messages with the same lengths.
// Beast checks a header line by line as it arrives only on its first pass; when more is
// needed it waits for the whole header before checking again, so a bad line in a header
// that never ends is an error in one read and still pending in another.
inline bool same_framing(const StreamOutcome& a, const StreamOutcome& b) {
  if (a.messages != b.messages || a.framed != b.framed) return false;
  return a.error == b.error || (a.error ? b.pending : a.pending);
}

// `start(parser)` sets up each fresh parser; `done(parser)` sees each finished message.
// Returns with `parser` on the message the bytes ended in, if no error.
template <class Parser, class Start, class Done>
StreamOutcome parse_stream(std::string_view bytes, std::size_t read_size, std::optional<Parser>& parser,
                           Start start, Done done) {
  boost::beast::flat_buffer buffer;
  parser.emplace();
  start(*parser);
  StreamOutcome out;
  std::size_t consumed = 0;
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t n = std::min(read_size, bytes.size() - at);
    auto space = buffer.prepare(n);
    std::memcpy(space.data(), bytes.data() + at, n);
    buffer.commit(n);
    at += n;
    while (buffer.size() != 0) {
      boost::beast::error_code ec;
      const auto used = parser->put(buffer.data(), ec);
      buffer.consume(used);
      consumed += used;
      if (ec == boost::beast::http::error::need_more) break;
      if (ec) {
        out.error = true;
        return out;
      }
      if (parser->is_done()) {
        ++out.messages;
        out.framed = consumed;
        done(*parser);
        parser.emplace();
        start(*parser);
        continue;
      }
      if (used == 0) break;
    }
  }
  out.pending = parser->got_some() || buffer.size() != 0;
  return out;
}

}  // namespace loadlab::fuzz
