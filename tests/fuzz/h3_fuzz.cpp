// Fuzz target: loadlab-target's HTTP/3 request handling below QUIC's packet protection (random
// datagrams die at decryption). An H3Connection is made without QUIC ("detached": no ngtcp2
// connection) and given its HTTP/3 layer as setup_http() would (make_http, control stream 3, QPACK
// streams 7 and 11). The harness then plays ngtcp2: it calls the connection's own ngtcp2 callbacks
// with the input's stream events (data, FIN, RESET_STREAM, STOP_SENDING, acknowledgements, stream
// close), keeping to what QUIC can deliver, and takes what nghttp3 writes as flush() would
// (what quic::write_packets() does, then stream_written() and credit_answered()). Time passes by moving the
// stored time points (H3FuzzPeer::jump).
//
// Input: records `op sel body`. op & 3: 0 STREAM, 1 STREAM+FIN, 2 RESET_STREAM, 3 STOP_SENDING;
// op & 4: a client unidirectional stream 2 + 4 * (sel % 8), else the request stream 4 * sel;
// op & 8: the batch ends, the server writes what it has. STREAM: len (u16 le) and len bytes;
// RESET_STREAM and STOP_SENDING: one byte c, the error 0x100 + c.
//
// Checks: the stream slots add up after every record, nothing is in flight once the connection
// is closed, the connection is freed, nghttp3 never offers writes for ever.
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "h3_connection.hpp"
#include "h3_server.hpp"
#include "loadlab/shared/limits.hpp"
#include "target_env.hpp"

namespace loadlab::target {

struct H3FuzzPeer {
  using C = H3Connection;
  using Clock = C::Clock;

  static const ngtcp2_callbacks& quic() {
    static const ngtcp2_callbacks callbacks = C::quic_callbacks();
    return callbacks;
  }

  // What setup_http() does once QUIC has keys, with the ids QUIC gives a server's first three
  // unidirectional streams.
  static bool attach(C& c) {
    c.random_ = Random(0x5eed);
    return c.make_http(limits::kMaxStreams) && nghttp3_conn_bind_control_stream(c.http_, 3) == 0 &&
           nghttp3_conn_bind_qpack_streams(c.http_, 7, 11) == 0;
  }
  static nghttp3_conn* http(C& c) { return c.http_; }
  static bool closed(const C& c) { return c.closed_; }

  // A callback's failure is the failed read of the packet that carried it.
  static void result(C& c, int rv) {
    if (rv != 0 && !c.closed_) c.on_read_error(rv);  // start_closing → close_now (detached)
  }
  static void data(C& c, std::int64_t id, std::uint64_t offset, std::span<const std::uint8_t> bytes,
                   bool fin) {
    c.read_at_ = Clock::now();  // as on_datagram
    result(c, quic().recv_stream_data(nullptr, fin ? NGTCP2_STREAM_DATA_FLAG_FIN : 0, id, offset,
                                      bytes.data(), bytes.size(), &c, nullptr));
  }
  static void reset(C& c, std::int64_t id, std::uint64_t final_size, std::uint64_t code) {
    result(c, quic().stream_reset(nullptr, id, final_size, code, &c, nullptr));
  }
  static void stop_sending(C& c, std::int64_t id, std::uint64_t code) {
    result(c, quic().stream_stop_sending(nullptr, id, code, &c, nullptr));
  }
  static void acked(C& c, std::int64_t id, std::uint64_t offset, std::uint64_t n) {
    result(c, quic().acked_stream_data_offset(nullptr, id, offset, n, &c, nullptr));
  }
  static void close_stream(C& c, std::int64_t id, std::optional<std::uint64_t> code) {
    result(c, quic().stream_close(nullptr, code ? NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET : 0, id,
                                  code.value_or(0), &c, nullptr));
  }
  // flush()'s bookkeeping for a packet carrying `accepted` bytes of the stream, then its send.
  static bool wrote(C& c, std::int64_t id, std::size_t accepted, bool fin_sent) {
    if (int rv = nghttp3_conn_add_write_offset(c.http_, id, accepted); rv != 0) {
      c.http_write_failed(rv);
      return false;
    }
    c.stream_written(id, fin_sent);
    c.credit_answered();
    return true;
  }
  static void write_failed(C& c) { c.start_closing(); }  // flush() on an nghttp3 error
  static std::vector<C::DetachedShut> take_shuts(C& c) { return std::exchange(c.detached_shuts_, {}); }
  static void close(C& c) { c.close_now(); }

  // How far time must move for the last pending delay to be due.
  static Clock::duration until_last_wake(const C& c) {
    return StreamResponderPeer::until_last_wake(c.responder_);
  }

  // `d` passes with nothing said: stored time points move back by d, then the timer (at its
  // earliest wake) and, with a request incomplete, the watchdog (now) are armed again.
  static void jump(C& c, Clock::duration d) {
    if (c.closed_) return;
    c.read_at_ -= d;
    if (StreamResponderPeer::jump(c.responder_, d)) c.arm_watchdog(Clock::now());
  }

  // Each open request stream is in exactly one state; every slot is open or free.
  static void check(const C& c) {
    if (!c.responder_.consistent() || static_cast<std::size_t>(c.responder_.open()) != c.streams_.size())
      std::abort();
  }
};

}  // namespace loadlab::target

namespace {

using namespace loadlab;
using target::H3Connection;
using Peer = target::H3FuzzPeer;

constexpr std::uint64_t kStreamWindow = 1 << 20;      // our MAX_STREAM_DATA (h3_connection.cpp)
constexpr std::uint64_t kStreamCredit = 256 * 1024;   // the client's MAX_STREAM_DATA for our responses
constexpr std::uint64_t kConnectionCredit = 1 << 20;  // the client's MAX_DATA
constexpr std::size_t kPacket = 1200;                 // stream bytes one packet takes
constexpr int kMaxWrites = 100000;

// What ngtcp2 knows of a stream.
struct QuicStream {
  std::uint64_t received = 0, sent = 0;
  bool fin_received = false, reset_received = false, read_shut = false;
  bool fin_sent = false, write_shut = false, closed = false;
  std::optional<std::uint64_t> code;
  bool read_done() const { return fin_received || reset_received || read_shut; }
  bool write_done() const { return fin_sent || write_shut; }
};

// The harness's ngtcp2: it delivers only what QUIC could (in order, each byte once, nothing after
// FIN or a reset, STOP_SENDING only where the client receives) and closes a stream once, when
// both of its sides are done.
struct Quic {
  H3Connection& c;
  std::map<std::int64_t, QuicStream> streams;
  std::uint64_t credit = kConnectionCredit;
  std::uint64_t bytes_written = 0;

  void maybe_close(std::int64_t id, QuicStream& s) {
    const bool bidi = id % 4 == 0;
    if (s.closed || !s.read_done() || (bidi && !s.write_done())) return;
    s.closed = true;
    Peer::close_stream(c, id, s.code);
  }

  // What HTTP/3 asked of QUIC's streams (STOP_SENDING, RESET_STREAM), done as ngtcp2 would.
  void apply_shuts() {
    for (const auto& shut : Peer::take_shuts(c)) {
      if (Peer::closed(c)) return;
      auto& s = streams[shut.id];
      if (s.closed) continue;
      s.read_shut |= shut.read;
      s.write_shut |= shut.write && !s.fin_sent;
      if (!s.code) s.code = shut.code;
      maybe_close(shut.id, s);
    }
  }

  // flush()'s nghttp3 half, for a client that takes every packet and acknowledges it at once.
  void flush() {
    auto* http = Peer::http(c);
    for (int writes = 0; writes < kMaxWrites; ++writes) {
      if (Peer::closed(c) || credit == 0) return;
      std::int64_t id = -1;
      int fin = 0;
      nghttp3_vec vec[16];
      const auto count = nghttp3_conn_writev_stream(http, &id, &fin, vec, std::size(vec));
      if (count < 0) return Peer::write_failed(c);
      if (id < 0) return;  // nothing to write
      auto& s = streams[id];
      if (s.write_shut || s.closed) {  // NGTCP2_ERR_STREAM_SHUT_WR
        nghttp3_conn_shutdown_stream_write(http, id);
        continue;
      }
      const std::size_t bytes = nghttp3_vec_len(vec, static_cast<std::size_t>(count));
      const std::uint64_t room = std::min(kStreamCredit - s.sent, credit);
      if (bytes > 0 && room == 0) {  // NGTCP2_ERR_STREAM_DATA_BLOCKED
        nghttp3_conn_block_stream(http, id);
        continue;
      }
      const auto accepted = static_cast<std::size_t>(std::min<std::uint64_t>({bytes, room, kPacket}));
      const bool fin_sent = fin != 0 && accepted == bytes;
      if (!Peer::wrote(c, id, accepted, fin_sent)) return;
      if (accepted > 0) Peer::acked(c, id, s.sent, accepted);
      s.sent += accepted;
      credit -= accepted;
      bytes_written += accepted;
      s.fin_sent |= fin_sent;
      apply_shuts();  // wrote() → answered() may shut a 413's read side
      maybe_close(id, s);
    }
    std::abort();  // nghttp3 still offers writes after kMaxWrites
  }

  void record(std::uint8_t op, std::uint8_t sel, std::span<const std::uint8_t> body, std::uint8_t code_byte) {
    const bool uni = (op & 4) != 0;
    const std::int64_t id = uni ? 2 + 4 * (sel % 8) : 4 * std::int64_t{sel};
    auto& s = streams[id];
    if (!s.closed) {
      const std::uint64_t code = 0x100 + code_byte;
      switch (op & 3) {
        case 0:
        case 1: {
          const bool fin = (op & 3) == 1;
          if (s.read_done() || (body.empty() && !fin) || s.received + body.size() > kStreamWindow) break;
          const auto offset = s.received;
          s.received += body.size();
          s.fin_received = fin;
          Peer::data(c, id, offset, body, fin);
          break;
        }
        case 2:
          if (s.read_done()) break;
          s.reset_received = true;
          if (!s.code) s.code = code;
          Peer::reset(c, id, s.received, code);
          break;
        default:
          if (uni || s.write_done()) break;
          s.write_shut = true;  // ngtcp2 resets our side, then tells the application
          if (!s.code) s.code = code;
          Peer::stop_sending(c, id, code);
          break;
      }
      apply_shuts();
      if (!Peer::closed(c)) maybe_close(id, s);
    }
    if ((op & 8) != 0) flush();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& t = fuzz::target_env();
  static auto* server = new target::H3Server(t.worker, t.env, nullptr);  // never listens
  t.begin();
  std::weak_ptr<H3Connection> alive;
  std::uint64_t written = 0;
  {
    auto c = std::make_shared<H3Connection>(*server, t.env, t.worker);
    alive = c;
    if (!Peer::attach(*c)) std::abort();  // production's settings must always make a connection
    Quic quic{*c, {}};
    quic.flush();  // our SETTINGS and the QPACK streams' types
    std::span<const std::uint8_t> in(data, size);
    while (in.size() >= 2 && !Peer::closed(*c)) {
      const auto op = in[0], sel = in[1];
      in = in.subspan(2);
      std::span<const std::uint8_t> body;
      std::uint8_t code = 0;
      if ((op & 3) <= 1) {
        const std::size_t len = in.size() >= 2 ? (in[0] | in[1] << 8) : 0;
        in = in.subspan(std::min<std::size_t>(2, in.size()));
        body = in.first(std::min(len, in.size()));
        in = in.subspan(body.size());
      } else if (!in.empty()) {
        code = in[0];
        in = in.subspan(1);
      }
      quic.record(op, sel, body, code);
      Peer::check(*c);
    }
    // The end: everything written, every delay over, then every request still incomplete reset
    // by the read timeout (on_watchdog), each step's writes taken.
    quic.flush();
    Peer::jump(*c, Peer::until_last_wake(*c));
    t.run_ready();  // on_timer → respond
    quic.apply_shuts();
    quic.flush();
    Peer::jump(*c, t.env.read_timeout + std::chrono::milliseconds(1));
    t.run_ready();  // on_watchdog → both sides of each incomplete request shut
    quic.apply_shuts();
    quic.flush();
    Peer::check(*c);
    written = quic.bytes_written;
    if (!Peer::closed(*c)) Peer::close(*c);  // as every connection ends: close_now → abandon_requests
  }
  t.end();
  if (!alive.expired()) std::abort();  // a handler or a cycle kept the connection alive
  if (std::getenv("LOADLAB_FUZZ_VERBOSE") != nullptr)
    std::fprintf(stderr, "h3: %llu bytes answered, %llu streams answered\n",
                 static_cast<unsigned long long>(written),
                 static_cast<unsigned long long>(t.worker.h3_streams.load()));
  return 0;
}
