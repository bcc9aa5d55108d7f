#pragma once
// The definitions of H2Session<Stream>, an HTTP/2 session: included by h2_session.cpp, which
// instantiates it for PlainStream (loadlab_target), and by tls_sessions.cpp, which instantiates
// it for TlsStream (loadlab_target_secure), so that a plain build links no TLS library.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <charconv>
#include <cstring>
#include <span>
#include <string_view>

#include "h2_session.hpp"
#include "io_failure.hpp"
#include "loadlab/shared/limits.hpp"
#include "request_parser.hpp"

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

namespace {

// A write carries at most this much, so a large body interleaves with other streams' frames
// and reads instead of being serialized whole first.
constexpr std::size_t kMaxWriteBatch = 256 * 1024;
// Receive windows: request bodies are discarded as they arrive, so large windows cost nothing
// and keep uploads from waiting for WINDOW_UPDATEs.
constexpr std::int32_t kStreamWindow = 1 << 20;
constexpr std::int32_t kConnectionWindow = 16 << 20;
// DATA payloads from this size on skip nghttp2's copy (NGHTTP2_DATA_FLAG_NO_COPY); smaller ones
// are cheaper copied than written as a buffer of their own.
constexpr std::size_t kNoCopyMin = 4096;

constexpr std::uint64_t kResetBurst = 1000;  // stream resets a connection may send at once
constexpr std::uint64_t kResetRate = 33;     // ... and per second after
constexpr std::size_t kMaxContinuations = 8;
constexpr std::size_t kMaxSettings = 32;
constexpr std::size_t kMaxOutboundAck = 1000;

// A header list past this many times the limit is no request but a flood: decoding stops
// and the connection ends (below it, the stream is answered 431).
constexpr std::size_t kHeaderFloodFactor = 4;

// Options shared by every session: nghttp2 copies them when a session is made.
struct Nghttp2Option {
  nghttp2_option* option = nullptr;
  Nghttp2Option() {
    nghttp2_option_new(&option);
    // Closed streams are kept only for the priority tree, which a benchmark target ignores.
    nghttp2_option_set_no_closed_streams(option, 1);
    // Floods, set here rather than left to the library's defaults (which differ between
    // versions and distributions' patches): a client that resets streams faster than
    // kResetBurst at once and kResetRate a second after (rapid reset, CVE-2023-44487), sends
    // more than kMaxContinuations CONTINUATION frames after one HEADERS (CVE-2024-27316's
    // kind), or more SETTINGS entries or frames needing an ACK than the caps, is sent GOAWAY
    // and the connection ends.
    nghttp2_option_set_stream_reset_rate_limit(option, kResetBurst, kResetRate);
    nghttp2_option_set_max_continuations(option, kMaxContinuations);
    nghttp2_option_set_max_settings(option, kMaxSettings);
    nghttp2_option_set_max_outbound_ack(option, kMaxOutboundAck);
  }
  ~Nghttp2Option() { nghttp2_option_del(option); }
};

}  // namespace

// --- nghttp2's callbacks: translate, then call the session --------------------------------

template <class Stream>
struct H2Session<Stream>::Glue {
  static H2Session& self(void* user_data) { return *static_cast<H2Session*>(user_data); }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
      self(user_data).begin_stream(frame->hd.stream_id);
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_size, const std::uint8_t* value, std::size_t value_size, std::uint8_t,
                       void* user_data) {
    auto& session = self(user_data);
    RequestStream* s = session.stream(frame->hd.stream_id);
    if (s == nullptr || s->state != RequestStream::State::receiving) return 0;
    const std::string_view n(reinterpret_cast<const char*>(name), name_size);
    const std::string_view v(reinterpret_cast<const char*>(value), value_size);
    const bool trailer = frame->headers.cat != NGHTTP2_HCAT_REQUEST;  // ignored but for their size
    if (session.responder_.take_header(*s, n, v, trailer) >
        kHeaderFloodFactor * std::size_t{session.env_.header_limit})
      return NGHTTP2_ERR_CALLBACK_FAILURE;  // ends the session: nothing more of it is decoded
    return 0;
  }

  static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t*,
                           std::size_t size, void* user_data) {
    auto& session = self(user_data);
    RequestStream* s = session.stream(stream_id);
    if (s != nullptr && s->state == RequestStream::State::receiving) session.responder_.take_body(*s, size);
    return 0;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto& session = self(user_data);
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        session.preface_done_ = true;
        break;
      case NGHTTP2_HEADERS:
      case NGHTTP2_DATA:
        if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
          RequestStream* s = session.stream(frame->hd.stream_id);
          if (s != nullptr && s->state == RequestStream::State::receiving)
            session.responder_.complete_request(*s);
        }
        break;
      default:
        break;
    }
    return 0;
  }

  static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_RST_STREAM) self(user_data).note_stream(frame->hd.stream_id, true);
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      auto& session = self(user_data);
      if (RequestStream* s = session.stream(frame->hd.stream_id)) session.answered(*s);
    }
    return 0;
  }

  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t, void* user_data) {
    auto& session = self(user_data);
    if (RequestStream* s = session.stream(stream_id)) session.end_stream(*s);
    return 0;
  }

  // Large DATA frames skip nghttp2's copy (NO_COPY): send_data puts the frame header in out_
  // and then the payload. On a plain stream, the configured body and filler (immutable, and
  // outliving the session) are written from where they are, as a buffer of their own; over TLS
  // the bytes are encrypted into a buffer anyway, and a body built per request lives in the
  // stream's slot, which may be reused before the write ends: those are copied into out_.
  static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source* source, void*) {
    auto& s = *static_cast<RequestStream*>(source->ptr);
    const std::uint64_t total = s.content.length.value_or(0);
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(length, total - s.read));
    if (n >= kNoCopyMin) {
      *flags |= NGHTTP2_DATA_FLAG_NO_COPY;  // s.sent advances in send_data
    } else {
      std::memcpy(buf, payload(s), n);
      s.sent += n;
    }
    s.read += n;
    if (s.read == total) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  static int send_data(nghttp2_session*, nghttp2_frame* frame, const std::uint8_t* frame_head,
                       std::size_t length, nghttp2_data_source* source, void* user_data) {
    auto& session = self(user_data);
    auto& s = *static_cast<RequestStream*>(source->ptr);
    if (frame->data.padlen != 0) return NGHTTP2_ERR_CALLBACK_FAILURE;  // never asked for
    session.out_.append(reinterpret_cast<const char*>(frame_head), 9);
    if (kTls || !s.immutable_body) {
      session.out_.append(payload(s), length);
    } else {
      session.payloads_.push_back({session.out_.size(), net::const_buffer(payload(s), length)});
      session.payload_bytes_ += length;
    }
    s.sent += length;
    return 0;
  }

  // Where the stream's next body bytes are. Filler is the same byte everywhere: any payload
  // (at most a frame, 16 KiB) is the start of the block.
  static const char* payload(const RequestStream& s) {
    return s.content.filler ? Filler::block().data() : s.content.bytes.data() + s.sent;
  }

  // Made once per process: nghttp2 copies callbacks and options into each session.
  static nghttp2_session* make_session(H2Session* session) {
    static const struct Callbacks {
      nghttp2_session_callbacks* callbacks = nullptr;
      Callbacks() {
        nghttp2_session_callbacks_new(&callbacks);
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_send);
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
        nghttp2_session_callbacks_set_send_data_callback(callbacks, send_data);
      }
      ~Callbacks() { nghttp2_session_callbacks_del(callbacks); }
    } callbacks;
    static const Nghttp2Option option;
    nghttp2_session* out = nullptr;
    if (nghttp2_session_server_new2(&out, callbacks.callbacks, session, option.option) != 0) return nullptr;
    return out;
  }
};

// --- life --------------------------------------------------------------------------------

template <class Stream>
H2Session<Stream>::H2Session(Stream&& stream, const SessionEnv& env, IoWorker& worker)
    : stream_(std::move(stream)),
      env_(env),
      worker_(worker),
      random_(random_seed(this)),
      watchdog_(stream_.get_executor()),
      watchdog_period_(std::min({env.read_timeout, env.idle_timeout, env.write_timeout})),
      responder_(*this, env, worker, worker.h2_streams, random_) {}

template <class Stream>
H2Session<Stream>::~H2Session() {
  nghttp2_session_del(session_);  // the responder gives back the streams never answered
}

template <class Stream>
void H2Session<Stream>::start(net::const_buffer received) {
  worker_.h2_connections.fetch_add(1, std::memory_order_relaxed);
  started_ = read_at_ = idle_since_ = written_at_ = Clock::now();
  session_ = Glue::make_session(this);
  if (session_ == nullptr) return close_now();
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, static_cast<std::uint32_t>(limits::kMaxStreams)},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kStreamWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, env_.header_limit},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
  arm_watchdog(started_ + watchdog_period_);
  if (received.size() != 0 && !receive(static_cast<const std::uint8_t*>(received.data()), received.size()))
    return;
  flush();
  do_read();
}

// --- reading -----------------------------------------------------------------------------

template <class Stream>
void H2Session<Stream>::do_read() {
  if (reading_ || closed_ || paused_) return;
  reading_ = true;
  stream_.async_read_some(net::buffer(read_buffer_),
                          beast::bind_front_handler(&H2Session::on_read, shared_from_this()));
}

template <class Stream>
void H2Session<Stream>::on_read(beast::error_code ec, std::size_t bytes) {
  reading_ = false;
  if (closed_) return;
  if (finishing_) return on_finishing_read(ec);
  if (ec) {
    // The client closed (over TLS with or without close_notify) or reset: nobody is left to
    // answer, whatever streams were open.
    if (ec != net::error::eof && !is_tls_truncation(ec)) fail(ec, "h2 read");
    return close_now();
  }
  read_at_ = Clock::now();
  if (!refused_ && !receive(read_buffer_.data(), bytes)) return;
  flush();
  if (!finishing_ && nghttp2_session_want_read(session_) != 0) do_read();
}

// Feeds bytes to nghttp2, whose callbacks start the streams they complete. False: the client
// broke the protocol badly enough that the connection is closed.
template <class Stream>
bool H2Session<Stream>::receive(const std::uint8_t* data, std::size_t size) {
  const auto turn_start = Clock::now();
  for (std::size_t at = 0; at < size;) {
    const std::size_t n = next_unit(data + at, size - at);
    if (refused_with_ != 0) {
      refuse(refused_with_);
      return true;
    }
    const auto rv = nghttp2_session_mem_recv(session_, data + at, n);
    if (rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC) {  // RFC 9113 §3.4: GOAWAY, then the connection ends
      refuse(NGHTTP2_PROTOCOL_ERROR);
      return true;
    }
    if (rv < 0) {
      env_.log->debug("h2: {}: closing", nghttp2_strerror(static_cast<int>(rv)));
      close_now();
      return false;
    }
    at += n;
    if (at < size && Clock::now() - turn_start >= kTurnBudget) {
      pending_.assign(data + at, data + size);
      paused_ = true;
      net::post(stream_.get_executor(), [self = shared_from_this()] { self->resume(); });
      return true;
    }
  }
  return true;
}

// The bytes up to the end of the preface or of the current frame (a frame's length is in its
// 9-byte header), or all of `size` when the unit goes on past it: nghttp2 keeps partial input.
template <class Stream>
std::size_t H2Session<Stream>::next_unit(const std::uint8_t* data, std::size_t size) {
  if (unit_left_ > 0) {
    const auto n = std::min(size, unit_left_);
    unit_left_ -= n;
    return n;
  }
  const auto take = std::min(size, frame_header_.size() - frame_header_have_);
  std::copy_n(data, take, frame_header_.begin() + frame_header_have_);
  frame_header_have_ += take;
  if (frame_header_have_ < frame_header_.size()) return take;
  frame_header_have_ = 0;
  unit_left_ =
      (std::size_t{frame_header_[0]} << 16) | (std::size_t{frame_header_[1]} << 8) | frame_header_[2];
  refused_with_ = frame_error();
  const auto n = std::min(size - take, unit_left_);
  unit_left_ -= n;
  return take + n;
}

// The connection error a frame (its header just read) is, where nghttp2 could not tell without
// closed streams (see seen_streams_); 0 when it is nghttp2's to judge.
template <class Stream>
std::uint32_t H2Session<Stream>::frame_error() const {
  const auto type = frame_header_[3];
  if (type != NGHTTP2_DATA && type != NGHTTP2_HEADERS) return 0;
  const std::int32_t id = static_cast<std::int32_t>((std::uint32_t{frame_header_[5]} & 0x7f) << 24 |
                                                    std::uint32_t{frame_header_[6]} << 16 |
                                                    std::uint32_t{frame_header_[7]} << 8 | frame_header_[8]);
  if (id == 0 || id % 2 == 0 || id > nghttp2_session_get_last_proc_stream_id(session_)) return 0;
  if (nghttp2_session_find_stream(session_, id) != nullptr) return 0;  // open: nghttp2's
  const auto it = std::lower_bound(seen_streams_.begin(), seen_streams_.end(), id,
                                   [](const SeenStream& s, std::int32_t v) { return s.id < v; });
  if (it != seen_streams_.end() && it->id == id) return it->reset_by_us ? 0 : NGHTTP2_STREAM_CLOSED;
  if (seen_all_ || (!seen_streams_.empty() && id > seen_streams_.front().id)) return NGHTTP2_PROTOCOL_ERROR;
  return 0;  // older than what is remembered: ignored, as nghttp2 does
}

// A stream began (or was reset by us before it could): remembered for frame_error().
template <class Stream>
void H2Session<Stream>::note_stream(std::int32_t id, bool reset_by_us) {
  constexpr std::size_t kSeenStreams = 256;
  if (seen_streams_.empty() || id > seen_streams_.back().id) {  // a new stream: the usual case
    seen_streams_.push_back(SeenStream{id, reset_by_us});
  } else {
    const auto it = std::lower_bound(seen_streams_.begin(), seen_streams_.end(), id,
                                     [](const SeenStream& s, std::int32_t v) { return s.id < v; });
    if (it != seen_streams_.end() && it->id == id) {
      it->reset_by_us |= reset_by_us;
      return;
    }
    seen_streams_.insert(it, SeenStream{id, reset_by_us});
  }
  if (seen_streams_.size() > kSeenStreams) {
    seen_streams_.pop_front();
    seen_all_ = false;
  }
}

// A connection error: GOAWAY with `error_code` is queued (flush() writes it, then the session
// finishes), and nothing more the client sends is given to nghttp2.
template <class Stream>
void H2Session<Stream>::refuse(std::uint32_t error_code) {
  refused_with_ = 0;
  if (refused_) return;
  refused_ = true;
  env_.log->debug("h2: connection error {}: GOAWAY", nghttp2_http2_strerror(error_code));
  nghttp2_session_terminate_session(session_, error_code);
}

template <class Stream>
void H2Session<Stream>::resume() {
  paused_ = false;
  if (closed_) return;
  const auto bytes = std::move(pending_);
  pending_.clear();
  if (!receive(bytes.data(), bytes.size())) return;
  flush();
  if (!finishing_ && nghttp2_session_want_read(session_) != 0) do_read();
}

// --- writing -----------------------------------------------------------------------------

// Writes every frame nghttp2 has ready, as one write, unless a write is in progress (its
// completion calls flush() again).
template <class Stream>
void H2Session<Stream>::flush() {
  if (writing_ || closed_) return;
  if (!notice_sent_ && env_.stopping->load(std::memory_order_relaxed)) {
    // Shutting down: no new streams, please; those open are answered first.
    nghttp2_submit_shutdown_notice(session_);
    notice_sent_ = true;
  }
  out_.clear();
  payloads_.clear();
  payload_bytes_ = 0;
  if (!serialize()) return;
  if (notice_sent_ && !goaway_sent_ && responder_.open() == 0 && batch_bytes() < kMaxWriteBatch) {
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);  // the final GOAWAY
    goaway_sent_ = true;
    if (!serialize()) return;
  }
  if (out_.empty()) {
    credit_answered();  // their last frames went out in the previous write
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) finish();
    return;
  }
  writing_ = true;
  written_at_ = Clock::now();
  answered_in_write_ = responder_.take_answered();
  auto handler = beast::bind_front_handler(&H2Session::on_write, shared_from_this());
  if (payloads_.empty()) return net::async_write(stream_, net::buffer(out_), std::move(handler));
  // Frame bytes and payloads in order; a span, so the write copies no vector.
  buffers_.clear();
  std::size_t from = 0;
  for (const auto& payload : payloads_) {
    buffers_.push_back(net::buffer(out_.data() + from, payload.at - from));
    buffers_.push_back(payload.bytes);
    from = payload.at;
  }
  if (from < out_.size()) buffers_.push_back(net::buffer(out_.data() + from, out_.size() - from));
  net::async_write(stream_, std::span<const net::const_buffer>(buffers_), std::move(handler));
}

template <class Stream>
bool H2Session<Stream>::serialize() {
  while (batch_bytes() < kMaxWriteBatch) {
    const std::uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      env_.log->warn("h2: {}", nghttp2_strerror(static_cast<int>(n)));
      close_now();
      return false;
    }
    if (n == 0) break;
    out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  return true;
}

template <class Stream>
void H2Session<Stream>::on_write(beast::error_code ec, std::size_t) {
  writing_ = false;
  if (closed_) return;
  if (ec) {
    fail(ec, "h2 write");
    return close_now();
  }
  written_at_ = Clock::now();
  responder_.credit(std::exchange(answered_in_write_, AnsweredCounts{}));
  flush();
  if (!closed_ && !finishing_ && nghttp2_session_want_read(session_) != 0) do_read();
}

template <class Stream>
void H2Session<Stream>::credit_answered() {
  responder_.credit(responder_.take_answered());
}

// Nothing more to say (after the final GOAWAY): over TLS our close_notify (not waiting for the
// client's), then FIN, then discard what the client still sends until it closes too, so our
// last frames are not destroyed by a reset. A TLS read in progress is cancelled first: the TLS
// shutdown must not run beside it.
template <class Stream>
void H2Session<Stream>::finish() {
  if (finishing_) return;
  finishing_ = true;
  written_at_ = Clock::now();  // the linger's start
  if constexpr (kTls) {
    beast::error_code ignored;
    if (reading_) return void(socket().cancel(ignored));  // on_read goes on with close_tls()
    return close_tls();
  }
  close_tcp();
}

// The read pending when finish() came has ended.
template <class Stream>
void H2Session<Stream>::on_finishing_read(beast::error_code ec) {
  if constexpr (kTls) {
    if (!tls_shutdown_) return close_tls();
  }
  if (ec) return close_now();
  do_linger();
}

template <class Stream>
void H2Session<Stream>::close_tcp() {
  beast::error_code ec;
  socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close_now();
  if (!reading_) do_linger();  // else the read pending goes on as the linger
}

template <class Stream>
void H2Session<Stream>::do_linger() {
  reading_ = true;
  socket().async_read_some(net::buffer(read_buffer_),
                           [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             self->reading_ = false;
                             if (self->closed_) return;
                             if (ec) return self->close_now();  // the client closed too (or the watchdog did)
                             self->do_linger();
                           });
}

template <class Stream>
void H2Session<Stream>::close_now() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  socket().close(ignored);  // pending operations complete with operation_aborted
  responder_.stop();
  watchdog_.cancel();
}

template <class Stream>
void H2Session<Stream>::fail(beast::error_code ec, const char* what) {
  log_io_failure(*env_.log, ec, what);
}

// --- streams -----------------------------------------------------------------------------

template <class Stream>
RequestStream* H2Session<Stream>::stream(std::int32_t id) {
  return static_cast<RequestStream*>(nghttp2_session_get_stream_user_data(session_, id));
}

template <class Stream>
void H2Session<Stream>::begin_stream(std::int32_t id) {
  nghttp2_session_set_stream_user_data(session_, id, &responder_.begin(id, read_at_));
  note_stream(id, false);
}

template <class Stream>
void H2Session<Stream>::submit_response(RequestStream& s, const ResponseHead& head) {
  const ResponseFields<nghttp2_nv, NGHTTP2_NV_FLAG_NO_COPY_NAME, NGHTTP2_NV_FLAG_NO_COPY_VALUE> headers(s,
                                                                                                        head);
  nghttp2_data_provider provider{};
  provider.source.ptr = &s;
  provider.read_callback = Glue::read_body;
  const auto id = static_cast<std::int32_t>(s.id);
  const int rv =
      nghttp2_submit_response(session_, id, headers.data(), headers.size(), head.body ? &provider : nullptr);
  if (rv != 0) env_.log->debug("h2: response to stream {}: {}", id, nghttp2_strerror(rv));
}

// The stream's last frame is serialized: its response counts once the write carrying it ends.
template <class Stream>
void H2Session<Stream>::answered(RequestStream& s) {
  if (responder_.answered(s)) {
    // The client may still be sending its body: refuse the rest (RFC 9113 §8.1).
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, static_cast<std::int32_t>(s.id), NGHTTP2_NO_ERROR);
  }
}

template <class Stream>
void H2Session<Stream>::end_stream(RequestStream& s) {
  nghttp2_session_set_stream_user_data(session_, static_cast<std::int32_t>(s.id), nullptr);
  if (responder_.end(s)) idle_since_ = Clock::now();
}

// --- timeouts ----------------------------------------------------------------------------

template <class Stream>
typename H2Session<Stream>::Clock::time_point H2Session<Stream>::deadline() const {
  if (finishing_) return written_at_ + env_.linger_timeout;
  if (writing_) return written_at_ + env_.write_timeout;
  if (!preface_done_) return started_ + env_.read_timeout;
  if (responder_.in_state(RequestStream::State::receiving) != 0) {
    // Each request must arrive whole within the read timeout from its first frame, however
    // many others overlap it: the oldest incomplete one decides (a scan, once per wake).
    return responder_.oldest_receiving() + env_.read_timeout;
  }
  if (responder_.open() == 0) return idle_since_ + env_.idle_timeout;
  // Responses submitted but nothing being written: the client's flow-control window is shut.
  if (responder_.in_state(RequestStream::State::responding) != 0) return written_at_ + env_.write_timeout;
  return Clock::time_point::max();  // streams waiting for their delay
}

template <class Stream>
void H2Session<Stream>::arm_watchdog(Clock::time_point at) {
  target::arm_watchdog(watchdog_, at, weak_from_this(), &H2Session<Stream>::on_watchdog);
}

template <class Stream>
void H2Session<Stream>::on_watchdog(beast::error_code ec) {
  if (ec || closed_) return;
  const auto now = Clock::now();
  const auto due = deadline();
  if (now >= due) {
    env_.log->debug("h2 timeout: closing");
    timed_out_ = true;
    return close_now();
  }
  arm_watchdog(std::min(due, now + watchdog_period_));
}

}  // namespace loadlab::target
