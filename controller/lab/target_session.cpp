#include "lab/target_session.hpp"

#include "loadlab/shared/timing.hpp"

namespace loadlab::controller {

TargetSession::TargetSession(const AgentRef& agent, Watchdog& watchdog) : agent_(agent), watchdog_(watchdog) {
  watchdog_.watch(&ctx_);
}

TargetSession::~TargetSession() {
  stop_heartbeat();
  if (stream_ && !status_) {
    watchdog_.cancel_all();  // only a repetition that is being unwound gets here
    abandon();
  }
  watchdog_.unwatch(&ctx_);
}

void TargetSession::start(const v1::TargetSpec& spec, double ready_s) {
  stream_ = agent_.stub->HostTarget(&ctx_);
  v1::TargetCommand cmd;
  *cmd.mutable_spec() = spec;
  if (!stream_->Write(cmd)) throw failure("start");
  std::string phase = "ready";
  for (v1::TargetEvent ev; endpoint_.empty();) {
    if (!stream_->Read(&ev)) throw failure(phase);
    if (ev.has_building()) {
      phase = "build";
      watchdog_.arm(phase, ev.building().timeout_ms() / 1e3 + ready_s);
    }
    if (ev.has_built()) {
      commit_ = ev.built().commit();
      if (phase == "build") watchdog_.arm(phase = "ready", ready_s);
    }
    if (ev.has_started()) build_ = ev.started().build();
    if (ev.has_ready()) {
      endpoint_ = ev.ready().endpoint();
      startup_ms_ = ev.ready().startup_ms();
    }
  }
}

CellError TargetSession::failure(const std::string& phase) {
  stream_->WritesDone();
  std::string exited;
  for (v1::TargetEvent ev; stream_->Read(&ev);)
    if (ev.has_exited()) exited = "target exited: " + ev.exited().output_tail();
  auto st = finish();
  if (!exited.empty()) return watchdog_.error(phase, exited);
  return watchdog_.error(phase, status_text(st), st.error_code());
}

void TargetSession::read_into(StreamEvents& events) {
  reader_ = std::thread([&events, stream = stream_.get()] {
    StreamMessage m;  // source kTarget
    while (stream->Read(&m.target_event)) {
      m.read_ns = m.target_event.has_clock_echo() ? controller_now_ns() : 0;
      events.push(m);
    }
    events.push({StreamMessage::kTarget, true, {}, {}, {}});  // finish() is the owner's
  });
  heartbeat_ = std::thread([this] {
    v1::TargetCommand beat;
    beat.mutable_mark()->set_kind(v1::Mark::HEARTBEAT);
    std::unique_lock lock(heartbeat_mutex_);
    while (!heartbeat_cv_.wait_for(lock, std::chrono::milliseconds(timing::kHeartbeatMs),
                                   [this] { return heartbeat_stop_; }))
      if (!write(beat)) return;  // the stream is gone: its reader reports why
  });
}

bool TargetSession::write(const v1::TargetCommand& cmd) {
  std::lock_guard lock(write_mutex_);
  return stream_->Write(cmd);
}

void TargetSession::stop_heartbeat() {
  {
    std::lock_guard lock(heartbeat_mutex_);
    heartbeat_stop_ = true;
  }
  heartbeat_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

bool TargetSession::probe() {
  v1::TargetCommand cmd;
  cmd.mutable_clock_probe()->set_controller_ns(controller_now_ns());
  return write(cmd);
}

void TargetSession::mark(v1::Mark::Kind kind, const std::string& label, const std::string& phase,
                         int64_t at_ns) {
  v1::TargetCommand cmd;
  cmd.mutable_mark()->set_kind(kind);
  cmd.mutable_mark()->set_label(label);
  if (at_ns != 0) cmd.mutable_mark()->set_at_ns(clock_.to_agent(at_ns));
  if (!write(cmd)) throw watchdog_.error(phase, "target agent " + agent_.name + " lost: cannot send a mark");
}

grpc::Status TargetSession::close() {
  stop_heartbeat();  // WritesDone is a write: after the last heartbeat
  stream_->WritesDone();
  if (reader_.joinable()) reader_.join();  // drains Exited; ends with the stream
  return finish();
}

void TargetSession::abandon() {
  stop_heartbeat();
  if (reader_.joinable()) reader_.join();
  if (stream_) finish();
}

grpc::Status TargetSession::finish() {
  if (!status_) status_ = stream_->Finish();
  return *status_;
}

}  // namespace loadlab::controller
