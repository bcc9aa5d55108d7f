#pragma once
// One load agent's RunLoad stream in a repetition: the spec goes out at once, then the
// session's reader thread pushes the agent's events, and the stream's end with its status.
// The repetition's thread records what the events say.
#include <memory>
#include <optional>
#include <thread>

#include "lab/cell_specs.hpp"
#include "lab/clock_offset.hpp"
#include "lab/placement.hpp"
#include "lab/stream_events.hpp"
#include "lab/watchdog.hpp"
#include "results/results.hpp"

namespace loadlab::controller {

class LoadSession {
 public:
  // `index` names the session's messages; the call is watched by `watchdog`, which must
  // outlive the session.
  LoadSession(size_t index, const AgentRef& agent, const LoadShare& share, Watchdog& watchdog);
  // A reader still running is cancelled (with every call of the repetition) and joined.
  ~LoadSession();
  LoadSession(const LoadSession&) = delete;
  LoadSession& operator=(const LoadSession&) = delete;

  // Sends `spec` and starts reading into `events`. A refused spec shows as the stream's end.
  // The stream is then closed from this side, unless the spec asks for a scheduled start:
  // it stays open for probe() and start_at().
  void start(const v1::LoadSpec& spec, StreamEvents& events);
  // A scheduled start, from the repetition's thread: a ClockProbe; and the instant the
  // window opens, in this controller's clock (converted to the agent's by clock()), after
  // which the stream is closed from this side. False when the stream is gone (its end
  // says why).
  bool probe();
  bool start_at(int64_t controller_ns);
  const ClockOffset& clock() const { return clock_; }
  bool ready() const { return ready_; }
  void set_ended() { ended_ = true; }  // its end was popped: nothing more is written
  bool ended() const { return ended_; }
  // Once the stream's end has been popped (or the calls were cancelled).
  void join();

  // Keeps what a popped event of this stream reports (`read_ns`: StreamMessage's).
  void record(const v1::LoadEvent& ev, int64_t read_ns = 0);
  const AgentRef& agent() const { return agent_; }
  const v1::Progress& progress() const { return progress_; }
  const std::vector<v1::Progress>& measured_progress() const { return measured_; }  // after warm-up
  bool has_result() const { return result_.has_value(); }
  bool complete() const { return result_ && usage_; }  // a result and its usage
  const v1::LoadResult& result() const { return *result_; }
  const v1::Usage& usage() const { return *usage_; }
  v1::LoadPart part() const;  // this agent's share of the repetition; complete() only

 private:
  using Stream = grpc::ClientReaderWriterInterface<v1::LoadCommand, v1::LoadEvent>;
  size_t index_;
  AgentRef agent_;
  LoadShare share_;
  Watchdog& watchdog_;
  grpc::ClientContext ctx_;
  std::unique_ptr<Stream> stream_;
  std::thread reader_;
  v1::Progress progress_;
  std::vector<v1::Progress> measured_;
  std::optional<v1::LoadResult> result_;
  std::optional<v1::Usage> usage_;
  ClockOffset clock_;
  bool ready_ = false;
  bool ended_ = false;
};

}  // namespace loadlab::controller
