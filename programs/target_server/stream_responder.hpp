#pragma once
// What HTTP/2 and HTTP/3 share in answering the requests of one connection: each request is a
// stream, answered like an HTTP/1.1 request (answer.hpp): the CPU work when it is whole, then
// the delay and any stall on the connection's one timer. A StreamResponder keeps the streams'
// slots (a pool, so a stream allocates nothing once the connection has warmed up, unless a knob
// asks for a body built per request), their states, the timer's queue, the header and body
// limits (431, 413) and the counts of requests in flight and answered.
//
// The protocol's session (H2Session, H3Connection) drives it and is its Owner, which frames a
// response and writes:
//   void submit_response(RequestStream&, const ResponseHead&);  // hand the response to the library
//   void flush();                                               // write what is pending
//   bool responder_stopped() const;                             // closed: no timer or turn runs
//   std::shared_ptr<Owner> shared_from_this();                  // kept alive by pending handlers
// The session looks streams up by id itself (nghttp2 keeps a pointer per stream; HTTP/3 a map).
//
// The timer's queue names a stream by id and slot, and a stream reset or closed meanwhile frees
// its slot, so its turn is skipped rather than touching a closed stream. With kTurns, requests
// asking CPU work are answered in turns of kTurnBudget (answer.hpp): one batch of datagrams can
// complete a thousand requests, and those past the budget wait, in order, for turns posted behind
// what the io thread has waiting (HTTP/2 gets the same by pausing its input instead).
//
// All of it runs on the connection's io thread: no strand and no lock.
#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "answer.hpp"
#include "canned_responses.hpp"
#include "io_worker.hpp"
#include "knobs.hpp"
#include "loadlab/shared/header_nv.hpp"
#include "request_parser.hpp"
#include "session_env.hpp"

namespace loadlab::target {

struct StreamResponderPeer;  // tests/fuzz/target_env.hpp: moves a responder's clock

// One request/response exchange of a connection, in a slot of its StreamResponder.
struct RequestStream {
  enum class State : std::uint8_t { receiving, waiting, responding };
  static constexpr std::int64_t kFree = -1;
  std::int64_t id = kFree;  // kFree: the slot is free
  State state = State::receiving;
  bool get = false;
  bool head = false;
  bool stats_path = false;
  bool counted = false;  // in env.in_flight, until its response is out or the stream ends
  bool queued = false;   // whole, waiting in the responder's queue for a turn to be answered
  unsigned error = 0;    // 413 or 431, decided while the request arrived
  std::chrono::steady_clock::time_point started;  // its first bytes arrived (read timeout)
  std::uint64_t header_bytes = 0;
  std::uint64_t body_bytes = 0;
  std::uint64_t read = 0;       // response body bytes handed to the protocol library
  std::uint64_t sent = 0;       // HTTP/2: of those, serialized for a write
  bool immutable_body = false;  // the configured body or filler, not a per-request text
  RequestKnobs knobs;
  Answer answer;
  AnswerContent content;
  std::string text;  // a body built per request (stats, a bad knob's message)
};

// A response's fields as text, for the protocol's header list (":status", "content-length").
struct ResponseHead {
  std::array<char, 3> status{};
  std::array<char, 20> length{};
  std::size_t length_size = 0;  // 0: no content-length (a bodiless status)
  bool body = false;            // a body follows the headers
  std::string_view status_text() const { return {status.data(), status.size()}; }
  std::string_view length_text() const { return {length.data(), length_size}; }
};

// The response's header fields as nghttp2 or nghttp3 takes them (their nv structs have the same
// members; kNoCopyName and kNoCopyValue are the library's NO_COPY flags): :status, server,
// content-type and, with a length, content-length. Names and the constant values are not
// copied by the library; :status and content-length, whose text lives in `head`, are.
template <class Nv, std::uint8_t kNoCopyName, std::uint8_t kNoCopyValue>
class ResponseFields {
 public:
  ResponseFields(const RequestStream& s, const ResponseHead& head) {
    add(":status", head.status_text(), false);
    add("server", "loadlab-target", true);
    add("content-type", s.content.content_type, true);
    if (head.length_size != 0) add("content-length", head.length_text(), false);
  }
  const Nv* data() const { return fields_.data(); }
  std::size_t size() const { return size_; }

 private:
  void add(std::string_view name, std::string_view value, bool value_static) {
    fields_[size_++] = shared::header_nv<Nv>(
        name, value, static_cast<std::uint8_t>(kNoCopyName | (value_static ? kNoCopyValue : 0)));
  }

  std::array<Nv, 4> fields_{};
  std::size_t size_ = 0;
};

// Responses credited as sent: `answered` leave env.in_flight, `counted` of them (stats excluded)
// count in the worker's responses_sent and the protocol's stream counter.
struct AnsweredCounts {
  std::uint64_t answered = 0;
  std::uint64_t counted = 0;
};

template <class Owner, bool kTurns>
class StreamResponder {
 public:
  using Clock = std::chrono::steady_clock;
  using State = RequestStream::State;

  // `sent_by_protocol`: the worker's counter of this protocol's responses (h2_streams, h3_streams).
  StreamResponder(Owner& owner, const SessionEnv& env, IoWorker& worker,
                  std::atomic<std::uint64_t>& sent_by_protocol, Random& random)
      : owner_(owner),
        env_(env),
        worker_(worker),
        sent_by_protocol_(sent_by_protocol),
        random_(random),
        timer_(worker.ioc) {
    slots_.reserve(kPoolReserve);
    free_.reserve(kPoolReserve);
  }
  // Requests never answered (the peer left, a timeout, the io_context torn down) must not hold
  // the shutdown drain forever.
  ~StreamResponder() { abandon(); }
  StreamResponder(const StreamResponder&) = delete;
  StreamResponder& operator=(const StreamResponder&) = delete;

  // --- streams, as the protocol library reports them ---------------------------------------

  // A stream opens: a free slot for it, receiving since `started`.
  RequestStream& begin(std::int64_t id, Clock::time_point started) {
    if (free_.empty()) free_.push_back(slots_.emplace_back(std::make_unique<RequestStream>()).get());
    RequestStream& s = *free_.back();
    free_.pop_back();
    s.id = id;
    s.state = State::receiving;
    s.get = s.head = s.stats_path = s.counted = s.queued = false;
    s.error = 0;
    s.header_bytes = s.body_bytes = s.read = s.sent = 0;
    if (s.knobs.any()) s.knobs = RequestKnobs{};
    s.started = started;
    ++in_state_[static_cast<int>(State::receiving)];
    ++open_;
    return s;
  }

  // One header field of a stream receiving: its size against the limit (431) and, for the
  // request's own fields (not trailers), the knobs, method and path. The measure is the one
  // SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 §6.5.2) and SETTINGS_MAX_FIELD_SECTION_SIZE
  // (RFC 9114 §4.2.2) count. Returns the header list's size so far.
  std::uint64_t take_header(RequestStream& s, std::string_view name, std::string_view value, bool trailer) {
    s.header_bytes += name.size() + value.size() + 32;
    if (s.header_bytes > env_.header_limit) s.error = 431;
    if (s.error != 0 || trailer) return s.header_bytes;
    if (name.empty() || name.front() != ':') {
      s.knobs.apply(name, value);
    } else if (name == ":method") {
      s.get = value == "GET";
      s.head = value == "HEAD";
    } else if (name == ":path") {
      s.stats_path = value == kStatsPath;
    }
    return s.header_bytes;
  }

  // Request body bytes of a stream receiving, discarded as they arrive. Past the limit the
  // request is answered 413 at once, and the session refuses the rest when it is answered.
  void take_body(RequestStream& s, std::size_t size) {
    s.body_bytes += size;
    if (s.body_bytes > env_.body_limit && s.error == 0) {
      s.error = 413;
      complete_request(s);
    }
  }

  // The request is whole: it counts as in flight, and is answered now, after its delay or
  // stall, or (kTurns) in a later turn.
  void complete_request(RequestStream& s) {
    s.counted = true;
    ++in_flight_here_;
    env_.in_flight->fetch_add(1, std::memory_order_relaxed);
    if (s.error != 0) return respond(s);
    if constexpr (kTurns) {
      // First come, first answered: behind requests already queued, or once this turn is spent.
      if (!queued_.empty() || (asks_work(s.knobs, env_) && turn_spent())) return queue_for_turn(s);
    }
    answer(s);
  }

  // The stream's last frame is on its way: its response counts once the write carrying it ends
  // (take_answered(), then credit()). True: the request was refused (413) while its body may
  // still be coming, and the session is to refuse the rest (RFC 9113 §8.1, RFC 9114 §4.1).
  bool answered(RequestStream& s) {
    if (!s.counted) return false;
    s.counted = false;
    ++pending_.answered;
    if (s.error != 0 || s.answer.kind != Answer::Kind::stats) ++pending_.counted;
    return s.error == 413 && s.state == State::responding;
  }

  // The stream closed: its slot is free, and a pending turn of it is skipped. True: no stream
  // is open now.
  bool end(RequestStream& s) {
    if (s.counted) {  // reset or abandoned before its response went out
      s.counted = false;
      --in_flight_here_;
      env_.in_flight->fetch_sub(1, std::memory_order_relaxed);
    }
    --in_state_[static_cast<int>(s.state)];
    s.id = RequestStream::kFree;
    free_.push_back(&s);
    return --open_ == 0;
  }

  void set_state(RequestStream& s, State state) {
    --in_state_[static_cast<int>(s.state)];
    ++in_state_[static_cast<int>(state)];
    s.state = state;
  }

  // --- what was answered ------------------------------------------------------------------

  // The responses answered since the last call, for the session to credit once they are written.
  AnsweredCounts take_answered() { return std::exchange(pending_, AnsweredCounts{}); }
  void credit(AnsweredCounts counts) {
    if (counts.answered == 0) return;
    worker_.responses_sent.fetch_add(counts.counted, std::memory_order_relaxed);
    sent_by_protocol_.fetch_add(counts.counted, std::memory_order_relaxed);
    env_.in_flight->fetch_sub(static_cast<std::int64_t>(counts.answered), std::memory_order_relaxed);
    in_flight_here_ -= static_cast<std::int64_t>(counts.answered);
  }
  // The connection says nothing more: its requests read and not answered leave env.in_flight
  // now, so a shutdown does not wait for them.
  void abandon() {
    if (in_flight_here_ != 0) env_.in_flight->fetch_sub(in_flight_here_, std::memory_order_relaxed);
    in_flight_here_ = 0;
    pending_ = AnsweredCounts{};
    for (const auto& slot : slots_) slot->counted = false;
  }

  // --- what the session asks -----------------------------------------------------------------

  int open() const { return open_; }
  int in_state(State state) const { return in_state_[static_cast<int>(state)]; }
  // When the oldest request still receiving began (Clock::time_point::max(): none).
  Clock::time_point oldest_receiving() const {
    auto oldest = Clock::time_point::max();
    if (in_state(State::receiving) == 0) return oldest;
    for (const auto& slot : slots_) {
      if (slot->id != RequestStream::kFree && slot->state == State::receiving)
        oldest = std::min(oldest, slot->started);
    }
    return oldest;
  }
  // f(RequestStream&) for each open stream.
  template <class F>
  void for_each_open(F&& f) {
    for (const auto& slot : slots_) {
      if (slot->id != RequestStream::kFree) f(*slot);
    }
  }
  // Each open stream is in exactly one state, and every slot is open or free (the fuzzers check).
  bool consistent() const {
    int counted = 0, used = 0;
    for (int n : in_state_) {
      if (n < 0) return false;
      counted += n;
    }
    for (const auto& slot : slots_) used += slot->id != RequestStream::kFree;
    return counted == open_ && used == open_ &&
           free_.size() + static_cast<std::size_t>(open_) == slots_.size();
  }
  // No timer or turn is to run (the connection closes).
  void stop() {
    timer_.cancel();
    queued_.clear();
  }

 private:
  friend struct StreamResponderPeer;
  static constexpr std::size_t kPoolReserve = 16;

  // A stream's turn on the timer: after its delay, or at the end of a stall.
  struct Wake {
    Clock::time_point at;
    std::int64_t id;
    RequestStream* stream;
    bool operator>(const Wake& other) const { return at > other.at; }
  };
  struct Queued {
    std::int64_t id;
    RequestStream* stream;
  };

  void answer(RequestStream& s) {
    s.answer = decide_answer(s.get && s.stats_path, s.knobs, env_, random_);
    if (s.answer.kind != Answer::Kind::regular) return respond(s);
    if (s.answer.delay.count() == 0) {
      if (!env_.stall->enabled()) return respond(s);
      return hold_or_respond(s, Clock::now());
    }
    if (s.state != State::waiting) set_state(s, State::waiting);
    schedule(s, Clock::now() + s.answer.delay);
  }

  void hold_or_respond(RequestStream& s, Clock::time_point now) {
    if (auto until = env_.stall->hold_until(now)) {
      if (s.state != State::waiting) set_state(s, State::waiting);
      return schedule(s, *until);
    }
    respond(s);
  }

  void respond(RequestStream& s) {
    set_state(s, State::responding);
    if (s.error != 0) {
      const auto body = env_.responses->error_body(static_cast<boost::beast::http::status>(s.error));
      s.content = AnswerContent{s.error, "text/plain", body.size(), body, false};
    } else {
      s.content = answer_content(s.answer, s.knobs, env_, s.text);
    }
    s.immutable_body = s.error == 0 && s.answer.kind == Answer::Kind::regular;
    ResponseHead head;
    std::to_chars(head.status.data(), head.status.data() + head.status.size(), s.content.status);
    if (s.content.length) {
      head.length_size = static_cast<std::size_t>(
          std::to_chars(head.length.data(), head.length.data() + head.length.size(), *s.content.length).ptr -
          head.length.data());
    }
    head.body = !s.head && s.content.length.value_or(0) != 0;
    owner_.submit_response(s, head);
  }

  // Whether this turn has spent its budget. A turn is the run of one handler: its start is noted
  // at the first request asking work, and its end is a posted handler that runs after it.
  bool turn_spent() {
    if (!in_turn_) {
      in_turn_ = true;
      turn_start_ = Clock::now();
      boost::asio::post(worker_.ioc, [self = owner_.shared_from_this(), this] { in_turn_ = false; });
      return false;
    }
    return Clock::now() - turn_start_ >= kTurnBudget;
  }

  void queue_for_turn(RequestStream& s) {
    set_state(s, State::waiting);
    s.queued = true;
    queued_.push_back(Queued{s.id, &s});
    post_turn();
  }

  void post_turn() {
    if (turn_posted_) return;
    turn_posted_ = true;
    boost::asio::post(worker_.ioc, [self = owner_.shared_from_this(), this] { on_turn(); });
  }

  // A turn of the queue: requests answered in order until the budget is spent (at least one), the
  // rest left for the next turn. A stream reset meanwhile is skipped (its slot is free or reused).
  void on_turn() {
    turn_posted_ = false;
    if (owner_.responder_stopped()) return;
    const auto start = Clock::now();
    for (bool first = true; !queued_.empty(); first = false) {
      if (!first && Clock::now() - start >= kTurnBudget) {
        post_turn();
        break;
      }
      const Queued next = queued_.front();
      queued_.pop_front();
      RequestStream& s = *next.stream;
      if (s.id != next.id || !s.queued) continue;
      s.queued = false;
      answer(s);
    }
    owner_.flush();
  }

  // --- the timer of delays and stalls ------------------------------------------------------

  void schedule(RequestStream& s, Clock::time_point at) {
    wakes_.push(Wake{at, s.id, &s});
    if (at < timer_at_) arm_timer(at);
  }

  void arm_timer(Clock::time_point at) {
    timer_at_ = at;
    timer_.expires_at(at);  // cancels a later wait, whose handler sees operation_aborted
    timer_.async_wait(
        [self = owner_.shared_from_this(), this](boost::beast::error_code ec) { on_timer(ec); });
  }

  void on_timer(boost::beast::error_code ec) {
    if (ec || owner_.responder_stopped()) return;  // re-armed sooner (another wait is pending), or closed
    timer_at_ = Clock::time_point::max();
    const auto now = Clock::now();
    while (!wakes_.empty() && wakes_.top().at <= now) {
      const Wake wake = wakes_.top();
      wakes_.pop();
      RequestStream& s = *wake.stream;
      // The slot may be free (the stream was reset) or hold a newer stream: skip it then.
      if (s.id != wake.id || s.state != State::waiting) continue;
      if (env_.stall->enabled()) {
        hold_or_respond(s, now);
      } else {
        respond(s);
      }
    }
    if (!wakes_.empty()) arm_timer(wakes_.top().at);
    owner_.flush();
  }

  Owner& owner_;
  const SessionEnv& env_;
  IoWorker& worker_;
  std::atomic<std::uint64_t>& sent_by_protocol_;
  Random& random_;

  std::vector<std::unique_ptr<RequestStream>> slots_;  // every slot made, open or free
  std::vector<RequestStream*> free_;
  std::array<int, 3> in_state_{};  // open streams by State
  int open_ = 0;
  std::int64_t in_flight_here_ = 0;  // this connection's share of env.in_flight
  AnsweredCounts pending_;           // answered, their writes not yet done

  boost::asio::steady_timer timer_;  // delays and stalls of every stream
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> wakes_;
  Clock::time_point timer_at_ = Clock::time_point::max();  // when the pending wait ends

  std::deque<Queued> queued_;  // kTurns: whole, waiting for a turn, in order
  Clock::time_point turn_start_;
  bool in_turn_ = false;      // a turn's start is noted, and its end posted
  bool turn_posted_ = false;  // on_turn() is posted
};

}  // namespace loadlab::target
