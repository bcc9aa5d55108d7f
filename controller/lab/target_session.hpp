#pragma once
// One repetition's HostTarget stream: the target runs exactly as long as the stream (see
// agent.proto). Called from the repetition's thread. Until read_into() that thread reads
// the stream itself (spec, then Ready); afterwards the session's reader thread does, and
// the repetition's thread only writes marks.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "lab/clock_offset.hpp"
#include "lab/placement.hpp"
#include "lab/stream_events.hpp"
#include "lab/watchdog.hpp"

namespace loadlab::controller {

class TargetSession {
 public:
  // The call is watched by `watchdog`, which must outlive the session.
  TargetSession(const AgentRef& agent, Watchdog& watchdog);
  // A stream still open is cancelled (with every call of the repetition) and finished.
  ~TargetSession();
  TargetSession(const TargetSession&) = delete;
  TargetSession& operator=(const TargetSession&) = delete;

  // Opens the stream, sends `spec` and waits for Ready. A target built from a commit that
  // the agent must build first is in the phase "build" from Building (within the build's
  // limit and `ready_s`) to Built, then in "ready" again for `ready_s`. Throws CellError
  // "start", "build" or "ready" with the target's last output when it exited, else the
  // stream's status; the stream is then finished.
  void start(const v1::TargetSpec& spec, double ready_s);
  const std::string& commit() const { return commit_; }  // Built.commit
  const std::string& endpoint() const { return endpoint_; }
  uint32_t startup_ms() const { return startup_ms_; }
  const std::string& build() const { return build_; }  // Started.build
  const std::string& agent_name() const { return agent_.name; }

  // From now on a reader thread pushes the stream's events, then its end, to `events`; and a
  // heartbeat thread sends Mark{HEARTBEAT} every timing::kHeartbeatMs, so that the agent
  // does not take the stream for abandoned during a long load (see agent.proto).
  void read_into(StreamEvents& events);
  // Sends a mark labelled `label`; throws CellError(`phase`) when the agent is gone. `at_ns`:
  // the instant it takes effect, in this controller's clock (converted to the agent's by
  // clock()); 0 = when the agent reads it.
  void mark(v1::Mark::Kind kind, const std::string& label, const std::string& phase, int64_t at_ns = 0);
  // After read_into(): a ClockProbe (false when the stream is gone); record() keeps the echo.
  bool probe();
  void record(const v1::ClockEcho& echo, int64_t read_ns) { clock_.add(echo, read_ns); }
  const ClockOffset& clock() const { return clock_; }
  // Ends the stream from this side, so that the agent stops the target; waits for the
  // reader to drain it (Exited comes last) and returns its status.
  grpc::Status close();
  // After the calls were cancelled: joins the reader and finishes the stream.
  void abandon();

 private:
  using Stream = grpc::ClientReaderWriterInterface<v1::TargetCommand, v1::TargetEvent>;
  CellError failure(const std::string& phase);  // before read_into(): why the stream failed
  grpc::Status finish();                        // Finish(), once
  bool write(const v1::TargetCommand& cmd);     // one writer at a time: marks and heartbeats
  void stop_heartbeat();

  AgentRef agent_;
  Watchdog& watchdog_;
  grpc::ClientContext ctx_;
  std::unique_ptr<Stream> stream_;
  std::optional<grpc::Status> status_;  // set once Finish() has returned
  std::string endpoint_;
  uint32_t startup_ms_ = 0;
  std::string build_;
  std::string commit_;
  std::thread reader_;
  std::mutex write_mutex_;
  std::mutex heartbeat_mutex_;
  std::condition_variable heartbeat_cv_;
  bool heartbeat_stop_ = false;
  std::thread heartbeat_;
  ClockOffset clock_;
};

}  // namespace loadlab::controller
