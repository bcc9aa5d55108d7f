#include "loadlab/controller/cell_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "loadlab/controller/cell_specs.hpp"
#include "loadlab/controller/result_merge.hpp"
#include "loadlab/controller/watchdog.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::controller {

namespace {

using TargetStream = grpc::ClientReaderWriterInterface<v1::TargetCommand, v1::TargetEvent>;
using LoadStream = grpc::ClientReaderWriterInterface<v1::LoadCommand, v1::LoadEvent>;

std::string exit_text(const v1::Exited& e) {
  return e.signal() ? "killed by signal " + std::to_string(e.signal())
                    : "exit status " + std::to_string(e.exit_code());
}

std::string status_text(const grpc::Status& st) {
  return st.error_message().empty() ? "gRPC status " + std::to_string(st.error_code()) : st.error_message();
}

// What the load-stream reader threads hand to the cell's thread.
// What the stream reader threads hand to the cell's thread: an event of a load stream
// (agent = its index) or of the target stream (agent = kTarget), or a stream's end.
constexpr size_t kTarget = SIZE_MAX;
struct LoadMessage {
  size_t agent = 0;
  bool end = false;
  grpc::Status status;
  v1::LoadEvent event;
  v1::TargetEvent target_event;
};

class MessageQueue {
 public:
  void push(LoadMessage m) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(m));
    }
    cv_.notify_one();
  }
  LoadMessage pop() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !queue_.empty(); });
    auto m = std::move(queue_.front());
    queue_.pop_front();
    return m;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<LoadMessage> queue_;
};

struct LoadCall {
  grpc::ClientContext ctx;
  std::unique_ptr<LoadStream> stream;
  std::thread reader;
  LoadShare share;
  std::optional<v1::LoadResult> result;
  std::optional<UsageResult> usage;
  v1::Progress progress;
};

}  // namespace

RepResult run_repetition(const Placement& placement, const Scenario& s, const Cell& c,
                         const PhaseLimits& limits, const ProgressFn& progress,
                         const std::atomic<int>* stop) {
  auto log = component_logger("controller");
  // Declared before the watchdog, so that it is gone (no more cancels) before they are.
  grpc::ClientContext tctx;
  std::vector<std::unique_ptr<LoadCall>> calls;
  MessageQueue queue;
  Watchdog watchdog(stop);

  // 1. Host the target and wait until it is ready.
  watchdog.watch(&tctx);
  watchdog.arm("ready", limits.ready_s);
  std::unique_ptr<TargetStream> target(placement.target.stub->HostTarget(&tctx));
  bool target_closed = false;
  // The reason the target stream failed: its Exited event or its status.
  auto target_failure = [&](const std::string& phase) {
    target_closed = true;
    target->WritesDone();
    std::string exited;
    for (v1::TargetEvent ev; target->Read(&ev);)
      if (ev.has_exited()) exited = "target exited: " + ev.exited().output_tail();
    auto st = target->Finish();
    if (!exited.empty()) return watchdog.error(phase, exited);
    return watchdog.error(phase, status_text(st), st.error_code());
  };
  {
    v1::TargetCommand cmd;
    *cmd.mutable_spec() = target_spec(s, c);
    if (!target->Write(cmd)) throw target_failure("start");
  }
  RepResult rep;
  std::string endpoint;
  for (v1::TargetEvent ev; endpoint.empty();) {
    if (!target->Read(&ev)) throw target_failure("ready");
    if (ev.has_ready()) {
      endpoint = ev.ready().endpoint();
      rep.target_startup_ms = ev.ready().startup_ms();
    }
  }
  // Marks are sent while the target reader thread owns the reading side.
  auto mark = [&](v1::Mark::Kind kind, const std::string& phase) {
    v1::TargetCommand cmd;
    cmd.mutable_mark()->set_kind(kind);
    cmd.mutable_mark()->set_label(c.key());
    if (!target->Write(cmd))
      throw watchdog.error(phase, "target agent " + placement.target.name + " lost: cannot send a mark");
  };

  // 2. Start every load agent's share. One reader thread per stream, the target's
  // included, feeds one queue: a target agent lost mid-cell is noticed at once (its
  // stream fails on gRPC keepalive), not when the load ends.
  auto shares = split_load(s, c, placement.loads.size());
  std::thread target_reader([&queue, stream = target.get()] {
    for (LoadMessage m{kTarget, false, {}, {}, {}}; stream->Read(&m.target_event);) queue.push(m);
    queue.push({kTarget, true, {}, {}, {}});  // Finish() is called by the cell's thread
  });
  watchdog.arm("warmup", s.load.warmup_s + limits.warmup_extra_s);
  for (size_t i = 0; i < shares.size(); ++i) {
    auto call = std::make_unique<LoadCall>();
    call->share = shares[i];
    watchdog.watch(&call->ctx);
    call->stream = placement.loads[i].stub->RunLoad(&call->ctx);
    v1::LoadCommand cmd;
    *cmd.mutable_spec() = load_spec(s, c, shares[i], endpoint);
    call->stream->Write(cmd);
    call->stream->WritesDone();
    call->reader = std::thread([&queue, i, stream = call->stream.get()] {
      for (LoadMessage m{i, false, {}, {}, {}}; stream->Read(&m.event);) queue.push(m);
      queue.push({i, true, stream->Finish(), {}, {}});
    });
    calls.push_back(std::move(call));
  }
  auto stop_all = [&] {
    watchdog.cancel_all();
    for (auto& call : calls)
      if (call->reader.joinable()) call->reader.join();
    if (target_reader.joinable()) target_reader.join();
    target_closed = true;
    target->Finish();
  };

  size_t started = 0, ended = 0, results = 0;
  bool have_usage = false;
  std::optional<CellError> failure;
  const double measure_limit =
      limits.measure_s > 0 ? limits.measure_s : (s.load.duration_s ? *s.load.duration_s + 60 : 24 * 3600.0);
  try {
    while (ended < calls.size() || !have_usage) {
      auto m = queue.pop();
      if (m.agent == kTarget) {
        if (m.end)
          throw watchdog.error(started ? "measure" : "warmup",
                               "target agent " + placement.target.name + " lost: the stream ended");
        if (m.target_event.has_usage()) {
          rep.server = usage_from_proto(m.target_event.usage());
          have_usage = true;
        } else if (m.target_event.has_exited()) {
          // The target died under load: the cell cannot be measured any more.
          throw CellError(started ? "measure" : "warmup", "target exited (" +
                                                              exit_text(m.target_event.exited()) +
                                                              "): " + m.target_event.exited().output_tail());
        }
        continue;
      }
      auto& call = *calls[m.agent];
      const std::string& agent = placement.loads[m.agent].name;
      if (m.end) {
        ++ended;
        if (!m.status.ok())
          throw watchdog.error("measure", "load agent " + agent + ": " + status_text(m.status),
                               m.status.error_code());
        if (!call.result || !call.usage)
          throw CellError("measure", "load agent " + agent + " ended without a result and its usage");
        continue;
      }
      const auto& ev = m.event;
      if (ev.has_progress()) {
        call.progress = ev.progress();
        if (progress) {
          LiveProgress live;
          for (auto& other : calls) {
            live.elapsed_s = std::max(live.elapsed_s, other->progress.elapsed_s());
            live.requests += other->progress.requests();
            live.errors += other->progress.errors();
            live.qps += other->progress.qps();
            live.warmup = live.warmup || other->progress.warmup();
          }
          progress(live);
        }
      } else if (ev.has_measure_start()) {
        // The server's window opens with the first load agent's and closes with the last.
        if (started++ == 0) {
          mark(v1::Mark::RESET, "measure");
          watchdog.arm("measure", measure_limit);
        }
      } else if (ev.has_result()) {
        call.result = ev.result();
        if (++results == calls.size()) {
          watchdog.arm("usage", limits.stop_s);
          mark(v1::Mark::FINAL, "usage");  // answered through the target reader
        }
      } else if (ev.has_usage()) {
        call.usage = usage_from_proto(ev.usage());
      }
    }
  } catch (const CellError& e) {
    failure = e;
  } catch (...) {
    stop_all();  // never unwind past running reader threads
    throw;
  }
  if (failure) {
    stop_all();
    throw *failure;
  }
  for (auto& call : calls) call->reader.join();

  // 3. Merge the load agents' results; stop the target.
  std::vector<v1::LoadResult> parts;
  for (auto& call : calls) parts.push_back(*call->result);
  RepResult merged = merge_load_results(parts);
  merged.server = rep.server;
  merged.target_startup_ms = rep.target_startup_ms;
  merged.target_agent = placement.target.name;
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& res = *calls[i]->result;
    merged.parts.push_back({placement.loads[i].name, calls[i]->share.threads, calls[i]->share.connections,
                            res.requests(), res.errors(), res.qps(), *calls[i]->usage});
    if (i == 0)
      merged.client = *calls[i]->usage;
    else
      merged.client.add(*calls[i]->usage);
  }
  watchdog.arm("stop", limits.stop_s);
  target_closed = true;
  target->WritesDone();
  target_reader.join();  // drains Exited; ends with the stream
  auto tstatus = target->Finish();
  if (!tstatus.ok()) log->warn("cell {}: target stream ended with: {}", c.key(), status_text(tstatus));
  return merged;
}

}  // namespace loadlab::controller
