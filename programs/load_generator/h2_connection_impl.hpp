#pragma once
// H2Connection's definitions (h2_connection.hpp), for each transport's instantiation:
// PlainTransport's in h2_connection.cpp (loadlab_load), TlsTransport's in tls_connections.cpp
// (loadlab_load_secure).
#include <algorithm>
#include <cstring>
#include <string>

#include "h2_connection.hpp"

namespace loadlab::load {

namespace h2_detail {

constexpr std::size_t kReadSize = 32 * 1024;
// A write carries at most about this much; the rest stays in nghttp2 for the next one.
constexpr std::size_t kWriteSize = 128 * 1024;
// Stream and connection windows, as h2load's defaults (-w 30 -W 30): large bodies never
// wait for a WINDOW_UPDATE.
constexpr int32_t kWindow = (1 << 30) - 1;
constexpr std::size_t kFrameHeader = 9;

}  // namespace h2_detail

// Handlers capture a raw `this`: the worker owns its connections and destroys them only
// after its io_context has run out of work, i.e. after every handler has run.

template <class Transport>
H2Connection<Transport>::H2Connection(Worker& worker, int index)
    : Base(worker, index),
      transport_(worker.io(), worker.plan()),
      dialer_(worker_, transport_),
      nva_(header_fields<nghttp2_nv>(worker.plan(),
                                     NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE)),
      read_buffer_(new uint8_t[h2_detail::kReadSize]) {
  out_.reserve(16 * 1024);
}

template <class Transport>
H2Connection<Transport>::~H2Connection() {
  delete_session();
}

template <class Transport>
const nghttp2_session_callbacks* H2Connection<Transport>::callbacks() {
  struct Holder {
    nghttp2_session_callbacks* callbacks = nullptr;
    Holder() {
      nghttp2_session_callbacks_new(&callbacks);
      nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, &H2Connection::on_begin_frame);
      nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &H2Connection::on_frame_recv);
      nghttp2_session_callbacks_set_on_header_callback(callbacks, &H2Connection::on_header);
      nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &H2Connection::on_stream_close);
    }
    ~Holder() { nghttp2_session_callbacks_del(callbacks); }
  };
  static const Holder holder;  // read-only once made: nghttp2 copies it into each session
  return holder.callbacks;
}

template <class Transport>
void H2Connection<Transport>::check_deadline(Clock::time_point now) {
  if (state_ == State::kConnecting) return dialer_.check_deadline(now);
  const auto timeout = worker_.plan().timeout;
  if (state_ == State::kClosing && writing_ && now > write_started_ + timeout) return transport_.close();
  if (state_ != State::kOpen) return;
  if (writing_ && now > write_started_ + timeout) {  // the server stopped reading
    timed_out_ = true;
    return close_connection(ErrorKind::kTimeout);
  }
  this->expire_streams(now);
}

// Frames still coming for the stream find no slot and are ignored.
template <class Transport>
void H2Connection<Transport>::cancel_stream(Slot& s) {
  nghttp2_session_set_stream_user_data(session_, s.stream_id, nullptr);
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.stream_id, NGHTTP2_CANCEL);
}

template <class Transport>
void H2Connection<Transport>::pump() {
  if (!this->fill_slots()) return;
  switch (state_) {
    case State::kIdle:
      if (!slots_.queued.empty()) return do_connect();
      if (slots_.done) this->end();
      return;
    case State::kOpen:
      if (!draining_) this->submit_queued();
      flush();
      if (this->idle_to_close()) close_connection(std::nullopt);
      return;
    case State::kConnecting:
    case State::kClosing:
      return;  // goes on when that completes
  }
}

template <class Transport>
bool H2Connection<Transport>::submit(Slot& s, Clock::time_point now) {
  nghttp2_data_provider body{};
  body.source.ptr = &s;
  body.read_callback = &H2Connection::read_body;
  const bool has_body = !worker_.plan().body.empty();
  s.body_sent = 0;
  int32_t id =
      nghttp2_submit_request(session_, nullptr, nva_.data(), nva_.size(), has_body ? &body : nullptr, &s);
  if (id < 0) {  // no stream can be opened on this session any more (ids used up, GOAWAY)
    draining_ = true;
    return false;
  }
  s.reset_by_peer = false;
  this->opened(s, id, now);
  return true;
}

template <class Transport>
void H2Connection<Transport>::flush() {
  if (writing_ || state_ != State::kOpen) return;
  out_.clear();
  while (out_.size() < h2_detail::kWriteSize) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) return close_connection(ErrorKind::kWrite);
    if (n == 0) break;
    out_.insert(out_.end(), data, data + n);
  }
  if (out_.empty()) {
    // Neither side has anything more to say (a GOAWAY was exchanged): the session is over.
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
      draining_ = true;
      if (slots_.open == 0) close_connection(std::nullopt);
    }
    return;
  }
  writing_ = true;
  write_started_ = Clock::now();
  transport_.async_write(boost::asio::buffer(out_.data(), out_.size()),
                         [this](const boost::system::error_code& ec, std::size_t) { on_write(ec); });
}

template <class Transport>
void H2Connection<Transport>::on_write(const boost::system::error_code& ec) {
  writing_ = false;
  if (state_ != State::kOpen) return close_notify_ ? send_close_notify() : maybe_closed();
  if (ec) return close_connection(timed_out_ ? ErrorKind::kTimeout : ErrorKind::kWrite);
  pump();
}

template <class Transport>
void H2Connection<Transport>::do_connect() {
  state_ = State::kConnecting;
  timed_out_ = false;
  dialer_.dial([this](std::optional<ErrorKind> failure) { on_connect(failure); });
}

template <class Transport>
void H2Connection<Transport>::on_connect(std::optional<ErrorKind> failure) {
  cost_ = dialer_.cost();
  if (failure) return connect_failed(*failure);
  if (stopped_) return connect_failed(ErrorKind::kConnect);
  if constexpr (Transport::kSecure) {
    if (std::string_view alpn = transport_.alpn(); alpn != "h2") {
      if (!worker_.stopping())
        worker_.note_tls_failure(
            alpn.empty() ? "the server selected no protocol in ALPN; --protocol h2 needs h2"
                         : "the server selected '" + std::string(alpn) + "' in ALPN; --protocol h2 needs h2");
      return connect_failed(ErrorKind::kTls);
    }
  }
  ready();
}

// The connect or the handshake failed (or a stop cut it): the requests waiting for it fail.
template <class Transport>
void H2Connection<Transport>::connect_failed(ErrorKind kind) {
  transport_.close();
  state_ = State::kIdle;
  if (preconnect_) {  // no request was waiting: connect again when the first slot comes
    preconnect_ = false;
    return pump();
  }
  if (!stopped_ && !worker_.stopping()) {
    auto now = Clock::now();
    for (int i : slots_.queued) {
      worker_.record_failure(slots_[i].measured, slots_[i].origin, now, kind, cost_);
      slots_.release(slots_[i]);
    }
  } else {
    for (int i : slots_.queued) slots_.release(slots_[i]);
  }
  slots_.queued.clear();
  pump();
}

template <class Transport>
void H2Connection<Transport>::ready() {
  if (!open_session()) return connect_failed(ErrorKind::kConnect);
  state_ = State::kOpen;
  draining_ = false;
  slots_.carried = 0;
  preconnect_ = false;
  do_read();
  // The requests that waited for this connection paid for it; the ones after them reuse it.
  this->submit_queued();
  cost_ = RequestCost{{}, {}, true, false};
  pump();
}

template <class Transport>
bool H2Connection<Transport>::open_session() {
  delete_session();
  if (nghttp2_session_client_new(&session_, callbacks(), this) != 0) {
    session_ = nullptr;
    return false;
  }
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, h2_detail::kWindow}};
  return nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings)) == 0 &&
         nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, h2_detail::kWindow) == 0;
}

template <class Transport>
void H2Connection<Transport>::do_read() {
  reading_ = true;
  transport_.async_read_some(boost::asio::buffer(read_buffer_.get(), h2_detail::kReadSize),
                             [this](const boost::system::error_code& ec, std::size_t n) { on_read(ec, n); });
}

template <class Transport>
void H2Connection<Transport>::on_read(const boost::system::error_code& ec, std::size_t n) {
  reading_ = false;
  if (state_ != State::kOpen) return maybe_closed();
  // End of stream (a TCP FIN, or a TLS peer that closes without close_notify) fails only the
  // streams still open: an idle connection the server closed is no error.
  if (ec) return close_connection(timed_out_ ? ErrorKind::kTimeout : ErrorKind::kRead);
  read_time_ = Clock::now();
  ssize_t used = nghttp2_session_mem_recv(session_, read_buffer_.get(), n);
  if (used < 0) return close_connection(ErrorKind::kBadResponse);  // not HTTP/2
  pump();
  if (state_ == State::kOpen) do_read();
}

template <class Transport>
int H2Connection<Transport>::on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
  if (hd->type != NGHTTP2_HEADERS && hd->type != NGHTTP2_DATA && hd->type != NGHTTP2_CONTINUATION) return 0;
  auto* self = static_cast<H2Connection*>(user_data);
  if (Slot* s = self->slot_of(hd->stream_id)) {
    if (s->first_byte == Clock::time_point{}) s->first_byte = self->read_time_;
    s->bytes += h2_detail::kFrameHeader + hd->length;
  }
  return 0;
}

template <class Transport>
int H2Connection<Transport>::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<H2Connection*>(user_data);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        if (Slot* s = self->slot_of(frame->hd.stream_id)) s->complete = true;
      break;
    case NGHTTP2_RST_STREAM:
      if (Slot* s = self->slot_of(frame->hd.stream_id)) s->reset_by_peer = true;
      break;
    case NGHTTP2_GOAWAY:
      self->draining_ = true;
      break;
    default:
      break;
  }
  return 0;
}

template <class Transport>
int H2Connection<Transport>::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                                       void* user_data) {
  // The last :status wins: interim responses (1xx) come before the final one.
  if (namelen != 7 || std::memcmp(name, ":status", 7) != 0 || valuelen != 3) return 0;
  auto* self = static_cast<H2Connection*>(user_data);
  if (Slot* s = self->slot_of(frame->hd.stream_id))
    s->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
  return 0;
}

template <class Transport>
int H2Connection<Transport>::on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                                             void* user_data) {
  auto* self = static_cast<H2Connection*>(user_data);
  if (Slot* s = self->slot_of(stream_id)) self->stream_closed(*s, error_code);
  return 0;
}

template <class Transport>
ssize_t H2Connection<Transport>::read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                                           uint32_t* data_flags, nghttp2_data_source* source,
                                           void* user_data) {
  auto* self = static_cast<H2Connection*>(user_data);
  auto* s = static_cast<Slot*>(source->ptr);
  const std::string& body = self->worker_.plan().body;
  std::size_t n = std::min(length, body.size() - s->body_sent);
  std::memcpy(buf, body.data() + s->body_sent, n);
  s->body_sent += n;
  if (s->body_sent == body.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

template <class Transport>
void H2Connection<Transport>::stream_closed(Slot& s, uint32_t error_code) {
  const auto done = this->done_time();
  if (s.complete) {
    if constexpr (Transport::kSecure) transport_.response_read();
    return this->record_complete(s, done);
  }
  if (error_code == NGHTTP2_REFUSED_STREAM && !s.reset_by_peer && !s.retried) {
    // Closed by nghttp2 for a GOAWAY whose last stream id is below it: not processed; once
    // more on a new connection.
    s.retried = true;
    slots_.requeue(s);
    return;
  }
  // The server reset it (or refused it twice): cut short; else nghttp2 reset it because the
  // response broke HTTP/2's rules.
  ErrorKind kind =
      s.reset_by_peer || error_code == NGHTTP2_REFUSED_STREAM ? ErrorKind::kRead : ErrorKind::kBadResponse;
  worker_.record_failure(s.measured, s.origin, done, kind, s.cost);
  slots_.release(s);
}

template <class Transport>
void H2Connection<Transport>::close_connection(std::optional<ErrorKind> kind) {
  if (state_ != State::kOpen) return;
  this->drop_open(kind);
  delete_session();
  state_ = State::kClosing;
  // --tls-resume: a connection this side ends on purpose ends with a close_notify, else the
  // server would not resume its session.
  if constexpr (Transport::kSecure) {
    if (!kind && !stopped_ && !worker_.stopping() && transport_.says_goodbye()) {
      close_notify_ = true;
      if (!writing_) send_close_notify();
      return;
    }
  }
  transport_.close();
  maybe_closed();
}

template <class Transport>
void H2Connection<Transport>::send_close_notify() {
  close_notify_ = false;
  if constexpr (Transport::kSecure) {
    writing_ = true;
    write_started_ = Clock::now();
    transport_.async_close_notify([this](const boost::system::error_code&) {
      writing_ = false;
      transport_.close();
      maybe_closed();
    });
  }
}

// The next connect waits until the old one's read and write have completed: their
// operations still refer to its TLS stream, which the next handshake replaces.
template <class Transport>
void H2Connection<Transport>::maybe_closed() {
  if (state_ != State::kClosing || reading_ || writing_) return;
  state_ = State::kIdle;
  pump();
}

template <class Transport>
void H2Connection<Transport>::delete_session() {
  if (!session_) return;
  nghttp2_session_del(session_);  // calls no callback
  session_ = nullptr;
}

}  // namespace loadlab::load
