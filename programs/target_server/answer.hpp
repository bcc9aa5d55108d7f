#pragma once
// What a request is answered with, whatever HTTP version carried it. Session (HTTP/1.1) and
// H2Session (HTTP/2, one per stream) both call decide_answer() when a request is whole and
// answer_content() when the response is written, so every knob means the same on both.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "knobs.hpp"
#include "session_env.hpp"

namespace loadlab::target {

struct Answer {
  enum class Kind {
    regular,   // status and body from the knobs or the server's defaults
    stats,     // the stats endpoint: not delayed, stalled or counted
    bad_knob,  // 400 naming the knob header with a bad value
  };
  Kind kind = Kind::regular;
  unsigned status = 200;
  std::optional<std::uint64_t> body_size;  // filler instead of the configured body
  std::chrono::nanoseconds delay{0};       // before the response (then any stall)
};

// A seed for a session's Random: its address and the time, distinct enough across sessions.
inline std::uint64_t random_seed(const void* self) {
  return reinterpret_cast<std::uintptr_t>(self) ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// The most one turn of a connection spends answering requests that ask for CPU work before the
// rest waits a turn posted behind what other connections have waiting (HTTP/2 and HTTP/3, which
// carry many requests per read): with requests of at most limits::kMaxRequestWorkUs each, another
// connection on the same io thread waits at most about 60 ms for one that asks much of many
// streams. Requests are still answered in the order they came, each costing the work it asks.
inline constexpr auto kTurnBudget = std::chrono::milliseconds(10);

// The request asks for CPU work (its knob, else the server's default).
inline bool asks_work(const RequestKnobs& knobs, const SessionEnv& env) {
  return knobs.work ? knobs.work->count() > 0 : env.work.count() > 0;
}

// On the io thread, once a request is whole: notes it for the stall, burns the CPU work asked
// (on this thread, as the knob means) and samples the delay. `stats`: GET of kStatsPath.
Answer decide_answer(bool stats, const RequestKnobs& knobs, const SessionEnv& env, Random& random);

// The response of an answer, for the session to frame.
struct AnswerContent {
  unsigned status = 200;
  std::string_view content_type = "text/plain";
  std::optional<std::uint64_t> length;  // nullopt: a bodiless status (204, 304)
  std::string_view bytes;               // the body, unless `filler`
  bool filler = false;                  // the body is `*length` filler bytes (Filler::block())
};

// `text` is the session's buffer for a body built per request (stats JSON, a bad knob's
// message); it must live until the response is written.
AnswerContent answer_content(const Answer& answer, const RequestKnobs& knobs, const SessionEnv& env,
                             std::string& text);

}  // namespace loadlab::target
