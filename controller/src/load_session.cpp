#include "loadlab/controller/load_session.hpp"

#include "loadlab/controller/result_merge.hpp"

namespace loadlab::controller {

namespace {
constexpr size_t kMaxIntervals = 7 * 24 * 3600;  // a week of seconds: bounded memory
}  // namespace

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
  if (ev.has_progress()) {
    progress_ = ev.progress();
    if (!progress_.warmup() && measured_.size() < kMaxIntervals) measured_.push_back(progress_);
  } else if (ev.has_result())
    result_ = ev.result();
  else if (ev.has_usage())
    usage_ = ev.usage();
}

v1::LoadPart LoadSession::part() const {
  v1::LoadPart p;
  p.set_agent(agent_.name);
  p.set_threads(share_.threads);
  p.set_connections(share_.connections);
  p.set_requests(result_->requests());
  p.set_errors(result_->errors());
  p.set_qps(result_->qps());
  *p.mutable_client() = *usage_;
  return p;
}

}  // namespace loadlab::controller
