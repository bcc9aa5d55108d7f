#include "loadlab/controller/load_session.hpp"

#include "loadlab/controller/result_merge.hpp"

namespace loadlab::controller {

LoadSession::LoadSession(size_t index, const AgentRef& agent, const LoadShare& share, Watchdog& watchdog)
    : index_(index), agent_(agent), share_(share), watchdog_(watchdog) {
  watchdog_.watch(&ctx_);
}

LoadSession::~LoadSession() {
  if (reader_.joinable()) {
    watchdog_.cancel_all();  // only a repetition that is being unwound gets here
    reader_.join();
  }
  watchdog_.unwatch(&ctx_);
}

void LoadSession::start(const v1::LoadSpec& spec, StreamEvents& events) {
  stream_ = agent_.stub->RunLoad(&ctx_);
  v1::LoadCommand cmd;
  *cmd.mutable_spec() = spec;
  // A failed write shows when reading: the stream then ends with the agent's status.
  if (stream_->Write(cmd)) stream_->WritesDone();
  reader_ = std::thread([&events, index = index_, stream = stream_.get()] {
    StreamMessage m{index, false, {}, {}, {}};
    while (stream->Read(&m.load_event)) events.push(m);
    events.push({index, true, stream->Finish(), {}, {}});
  });
}

void LoadSession::join() {
  if (reader_.joinable()) reader_.join();
}

void LoadSession::record(const v1::LoadEvent& ev) {
  if (ev.has_progress())
    progress_ = ev.progress();
  else if (ev.has_result())
    result_ = ev.result();
  else if (ev.has_usage())
    usage_ = usage_from_proto(ev.usage());
}

LoadPart LoadSession::part() const {
  return {agent_.name,    share_.threads, share_.connections, result_->requests(), result_->errors(),
          result_->qps(), *usage_};
}

}  // namespace loadlab::controller
