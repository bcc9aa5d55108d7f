#include "loadlab/controller/target_session.hpp"

namespace loadlab::controller {

TargetSession::TargetSession(const AgentRef& agent, Watchdog& watchdog) : agent_(agent), watchdog_(watchdog) {
  watchdog_.watch(&ctx_);
}

TargetSession::~TargetSession() {
  if (stream_ && !status_) {
    watchdog_.cancel_all();  // only a repetition that is being unwound gets here
    abandon();
  }
  watchdog_.unwatch(&ctx_);
}

void TargetSession::start(const v1::TargetSpec& spec) {
  stream_ = agent_.stub->HostTarget(&ctx_);
  v1::TargetCommand cmd;
  *cmd.mutable_spec() = spec;
  if (!stream_->Write(cmd)) throw failure("start");
  for (v1::TargetEvent ev; endpoint_.empty();) {
    if (!stream_->Read(&ev)) throw failure("ready");
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
    while (stream->Read(&m.target_event)) events.push(m);
    events.push({StreamMessage::kTarget, true, {}, {}, {}});  // finish() is the owner's
  });
}

void TargetSession::mark(v1::Mark::Kind kind, const std::string& label, const std::string& phase) {
  v1::TargetCommand cmd;
  cmd.mutable_mark()->set_kind(kind);
  cmd.mutable_mark()->set_label(label);
  if (!stream_->Write(cmd))
    throw watchdog_.error(phase, "target agent " + agent_.name + " lost: cannot send a mark");
}

grpc::Status TargetSession::close() {
  stream_->WritesDone();
  if (reader_.joinable()) reader_.join();  // drains Exited; ends with the stream
  return finish();
}

void TargetSession::abandon() {
  if (reader_.joinable()) reader_.join();
  if (stream_) finish();
}

grpc::Status TargetSession::finish() {
  if (!status_) status_ = stream_->Finish();
  return *status_;
}

}  // namespace loadlab::controller
