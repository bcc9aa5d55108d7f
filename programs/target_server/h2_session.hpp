#pragma once
// One HTTP/2 connection, taken over from a Session once the protocol is known: h2 chosen by
// ALPN over TLS, or h2c with prior knowledge (the client preface as a plain connection's first
// bytes). libnghttp2 does the framing, HPACK and flow control in memory (mem_recv, mem_send);
// this class does the I/O: one read at a time, and one write at a time carrying every frame
// pending, so a read that completes ten requests is answered with one write.
//
// Each stream is answered by the session's StreamResponder (stream_responder.hpp), as
// H3Connection's are: the CPU work when its request is whole, then the delay and any stall.
//
// All handlers run on the io thread of the stream's io_context: no strand and no lock.
// Timeouts use a lazy watchdog as Session does; the deadline is derived from the state when it
// wakes (preface or a request incomplete: read timeout; a write pending or blocked by flow
// control: write timeout; no stream open: idle timeout).
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "answer.hpp"
#include "knobs.hpp"
#include "session.hpp"
#include "session_env.hpp"
#include "stream_responder.hpp"

struct nghttp2_session;

namespace loadlab::target {

struct H2FuzzPeer;  // tests/fuzz/h2_fuzz.cpp: seeds a session's Random and moves its clock

template <class Stream>
class H2Session : public std::enable_shared_from_this<H2Session<Stream>> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `worker` owns the io_context of `stream`; its counters are this session's to bump.
  H2Session(Stream&& stream, const SessionEnv& env, IoWorker& worker);
  ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  // On the stream's io thread. `received`: bytes already read from the client (for h2c, the
  // preface at least), processed before the first read.
  void start(boost::asio::const_buffer received);

 private:
  friend struct H2FuzzPeer;
  struct Glue;  // nghttp2's callbacks (h2_session.cpp)
  using std::enable_shared_from_this<H2Session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<H2Session<Stream>>::weak_from_this;

  boost::asio::ip::tcp::socket& socket() { return boost::beast::get_lowest_layer(stream_); }

  // I/O.
  void do_read();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  bool receive(const std::uint8_t* data, std::size_t size);
  std::size_t next_unit(const std::uint8_t* data, std::size_t size);
  std::uint32_t frame_error() const;
  void note_stream(std::int32_t id, bool reset_by_us);
  void refuse(std::uint32_t error_code);
  void resume();
  void flush();
  bool serialize();
  void on_write(boost::beast::error_code ec, std::size_t bytes);
  void credit_answered();
  void finish();
  void on_finishing_read(boost::beast::error_code ec);
  void close_tls();  // TlsStream's only (tls_sessions.cpp): our close_notify, then close_tcp()
  void close_tcp();
  void do_linger();
  void close_now();
  void fail(boost::beast::error_code ec, const char* what);

  // Streams: the responder answers them; these hand them over from nghttp2 and back.
  friend class StreamResponder<H2Session, false>;
  RequestStream* stream(std::int32_t id);
  void begin_stream(std::int32_t id);
  void submit_response(RequestStream& s, const ResponseHead& head);
  void answered(RequestStream& s);
  void end_stream(RequestStream& s);
  bool responder_stopped() const { return closed_; }

  // Watchdog.
  Clock::time_point deadline() const;
  void arm_watchdog(Clock::time_point at);
  void on_watchdog(boost::beast::error_code ec);

  Stream stream_;
  const SessionEnv& env_;
  IoWorker& worker_;
  nghttp2_session* session_ = nullptr;
  Random random_;
  boost::asio::steady_timer watchdog_;  // timeouts
  Clock::duration watchdog_period_;
  StreamResponder<H2Session, false> responder_;  // HTTP/2 pauses its input instead of turns
  // Streams whose last frame is in the write in progress (credited after it).
  AnsweredCounts answered_in_write_;

  std::array<std::uint8_t, 16 * 1024> read_buffer_;
  // Bytes read but not yet given to nghttp2. Bytes go to nghttp2 one frame at a time, and a
  // turn that has spent kTurnBudget (answering requests that ask for CPU work) leaves the rest
  // for a turn of its own, posted behind what other connections have waiting: one connection
  // asking much work of many streams cannot hold the io thread. Nothing is read meanwhile.
  std::vector<std::uint8_t> pending_;
  bool paused_ = false;
  std::size_t unit_left_ = 24;  // bytes left of the client's preface, then of the current frame
  std::array<std::uint8_t, 9> frame_header_{};
  std::size_t frame_header_have_ = 0;
  // RFC 9113 §5.1 and §5.1.1 for the frames nghttp2 cannot judge: it keeps no closed streams
  // here (no_closed_streams: they would cost memory per connection for a priority tree a
  // benchmark target ignores), so a DATA or HEADERS frame for a stream that has closed would be
  // ignored. The streams opened lately (by id, ascending) and whether we reset them tell: a frame
  // for one that closed is a connection error STREAM_CLOSED, unless we reset it (what the client
  // had in flight is ignored, §5.1); one for a lower id never opened is a PROTOCOL_ERROR.
  struct SeenStream {
    std::int32_t id;
    bool reset_by_us;
  };
  std::deque<SeenStream> seen_streams_;  // at most kSeenStreams
  bool seen_all_ = true;                 // none forgotten yet: an id not among them was never opened
  std::uint32_t refused_with_ = 0;       // a connection error found in the input (refuse())
  bool refused_ = false;                 // our GOAWAY is queued: nothing more is read into nghttp2
  // A DATA payload written from where it is, after the first `at` bytes of out_.
  struct Payload {
    std::size_t at;
    boost::asio::const_buffer bytes;
  };
  std::size_t batch_bytes() const { return out_.size() + payload_bytes_; }

  std::string out_;  // the frames of the write in progress (DATA payloads apart)
  std::vector<Payload> payloads_;
  std::size_t payload_bytes_ = 0;
  std::vector<boost::asio::const_buffer> buffers_;  // out_ and payloads_ in order
  bool reading_ = false;
  bool writing_ = false;
  bool preface_done_ = false;  // the client's SETTINGS arrived
  bool notice_sent_ = false;   // shutting down: the GOAWAY notice is queued
  bool goaway_sent_ = false;   // the final GOAWAY is queued
  bool finishing_ = false;     // all said: closing, then discarding what the client still sends
  bool tls_shutdown_ = false;  // our close_notify is on its way
  bool closed_ = false;
  bool timed_out_ = false;
  Clock::time_point started_;
  Clock::time_point read_at_;     // the last read ended: when the streams it began started
  Clock::time_point idle_since_;  // no stream open since (idle timeout)
  Clock::time_point written_at_;  // the last write began or ended (write timeout)
};

extern template class H2Session<PlainStream>;  // h2_session.cpp; TlsStream's: tls_sessions.cpp

}  // namespace loadlab::target
