#include "lab/load_session.hpp"

#include "results/result_merge.hpp"

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
  if (stream_->Write(cmd) && !spec.scheduled_start()) stream_->WritesDone();
  reader_ = std::thread([&events, index = index_, stream = stream_.get()] {
    StreamMessage m{index, false, {}, {}, {}};
    while (stream->Read(&m.load_event)) {
      m.read_ns = m.load_event.has_clock_echo() ? controller_now_ns() : 0;
      events.push(m);
    }
    events.push({index, true, stream->Finish(), {}, {}});
  });
}

bool LoadSession::probe() {
  v1::LoadCommand cmd;
  cmd.mutable_clock_probe()->set_controller_ns(controller_now_ns());
  return stream_->Write(cmd);
}

bool LoadSession::start_at(int64_t controller_ns) {
  v1::LoadCommand cmd;
  cmd.mutable_start_at()->set_agent_ns(clock_.to_agent(controller_ns));
  const bool sent = stream_->Write(cmd);
  if (sent) stream_->WritesDone();
  return sent;
}

void LoadSession::join() {
  if (reader_.joinable()) reader_.join();
}

void LoadSession::record(const v1::LoadEvent& ev, int64_t read_ns) {
  if (ev.has_clock_echo()) {
    clock_.add(ev.clock_echo(), read_ns);
  } else if (ev.has_ready()) {
    ready_ = true;
  } else if (ev.has_progress()) {
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
  p.set_window_open_ns(result_->window_open_ns());
  p.set_window_close_ns(result_->window_close_ns());
  p.set_pace_granularity_us(result_->pace_granularity_us());
  return p;
}

}  // namespace loadlab::controller
