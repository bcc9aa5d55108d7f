#pragma once
// A fake agent for the controller's unit tests: gRPC's generated MockAgentStub whose
// streaming calls return in-memory streams. The test plays the agent's side of each
// stream: it sends events, ends the stream, and reacts to the controller's commands.
#include <gmock/gmock.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "lab/clock_offset.hpp"
#include "lab/watchdog.hpp"
#include "loadlab/v1/agent_mock.grpc.pb.h"

namespace loadlab::controller::fake {

using namespace std::chrono_literals;

// One stream, shared by its controller end (FakeStream, owned by the controller) and the
// test, which keeps it after the controller is done with it.
template <class W, class R>
class Stream {
 public:
  // Agent side, called by the test or by the reactions below.
  void send(R event) {
    {
      std::lock_guard lock(mutex_);
      if (ended_) return;
      inbox_.push_back(std::move(event));
    }
    cv_.notify_all();
  }
  // The agent ends the stream: the controller reads what was sent, then `status`.
  void end(grpc::Status status = grpc::Status::OK) {
    {
      std::lock_guard lock(mutex_);
      if (ended_) return;
      ended_ = true;
      status_ = std::move(status);
    }
    cv_.notify_all();
  }
  // What the controller's TryCancel would do to a real call.
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      if (ended_) return;
      ended_ = cancelled_ = true;
      inbox_.clear();
      status_ = grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled");
    }
    cv_.notify_all();
  }

  // Reactions to the controller's writes, set when the stream opens (FakeAgent's scripts);
  // they run on the controller's thread, outside the stream's lock.
  std::function<void(const W&, Stream&)> on_write;
  std::function<void(Stream&)> on_writes_done;

  std::vector<W> written() const {
    std::lock_guard lock(mutex_);
    return written_;
  }
  // Waits, at most 5 s of real time, until what the controller wrote satisfies `pred`.
  bool wait_written(const std::function<bool(const std::vector<W>&)>& pred) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 5s, [&] { return pred(written_); });
  }
  bool writes_done() const {
    std::lock_guard lock(mutex_);
    return writes_done_;
  }
  bool cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }

  // Controller side, through FakeStream.
  bool read(R* out) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !inbox_.empty() || ended_; });
    if (inbox_.empty()) return false;
    *out = std::move(inbox_.front());
    inbox_.pop_front();
    return true;
  }
  bool write(const W& msg) {
    {
      std::lock_guard lock(mutex_);
      if (ended_) return false;
      written_.push_back(msg);
    }
    cv_.notify_all();
    if (on_write) on_write(msg, *this);
    answer_protocol(msg);
    return true;
  }
  void close_writes() {
    {
      std::lock_guard lock(mutex_);
      writes_done_ = true;
    }
    if (on_writes_done) on_writes_done(*this);
  }
  grpc::Status finish() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return ended_; });
    return status_;
  }

 private:
  // What every agent does whatever the test plays (agent.proto): a clock probe is echoed (the
  // fake's clock is the controller's), and a load spec with a scheduled start is warmed up at
  // once. The test's scripts see these commands too, and may answer more.
  void answer_protocol(const W& msg) {
    if constexpr (std::is_same_v<W, v1::LoadCommand>) {
      if (msg.has_clock_probe()) {
        v1::LoadEvent e;
        fill_echo(msg.clock_probe(), e.mutable_clock_echo());
        send(std::move(e));
      } else if (msg.has_spec() && msg.spec().scheduled_start()) {
        v1::LoadEvent e;
        e.mutable_ready()->set_agent_ns(controller_now_ns());
        send(std::move(e));
      }
    } else if constexpr (std::is_same_v<W, v1::TargetCommand>) {
      if (msg.has_clock_probe()) {
        v1::TargetEvent e;
        fill_echo(msg.clock_probe(), e.mutable_clock_echo());
        send(std::move(e));
      }
    }
  }
  static void fill_echo(const v1::ClockProbe& probe, v1::ClockEcho* echo) {
    echo->set_controller_ns(probe.controller_ns());
    echo->set_received_ns(controller_now_ns());
    echo->set_sent_ns(controller_now_ns());
  }

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<R> inbox_;
  std::vector<W> written_;
  bool ended_ = false, cancelled_ = false, writes_done_ = false;
  grpc::Status status_;
};

using TargetStream = Stream<v1::TargetCommand, v1::TargetEvent>;
using LoadStream = Stream<v1::LoadCommand, v1::LoadEvent>;

template <class W, class R>
class FakeStream final : public grpc::ClientReaderWriterInterface<W, R> {
 public:
  explicit FakeStream(std::shared_ptr<Stream<W, R>> s) : s_(std::move(s)) {}
  bool Read(R* msg) override { return s_->read(msg); }
  bool Write(const W& msg, grpc::WriteOptions) override { return s_->write(msg); }
  bool WritesDone() override {
    s_->close_writes();
    return true;
  }
  grpc::Status Finish() override { return s_->finish(); }
  bool NextMessageSize(uint32_t* size) override {
    *size = UINT32_MAX;
    return true;
  }
  void WaitForInitialMetadata() override {}

 private:
  std::shared_ptr<Stream<W, R>> s_;
};

class FakeAgent {
 public:
  explicit FakeAgent(std::string name, std::vector<std::string> catalog = {"hello"})
      : name_(std::move(name)) {
    info_.set_name(name_);
    info_.set_cores(4);
    info_.set_scheduled_start(true);
    for (auto& c : catalog) info_.add_catalog(c);
  }

  // What Describe answers: OK with the agent's info, or an agent that is down.
  grpc::Status describe_status = grpc::Status::OK;
  v1::AgentInfo& info() { return info_; }

  // Scripts for each stream the controller opens, run on the controller's thread before
  // it writes: typically they set the stream's reactions.
  std::function<void(TargetStream&)> on_host_target;
  std::function<void(LoadStream&)> on_run_load;

  // A stub the controller may own: gRPC's generated mock, answering for this agent.
  std::unique_ptr<v1::Agent::StubInterface> stub() {
    auto stub = std::make_unique<::testing::NiceMock<v1::MockAgentStub>>();
    ON_CALL(*stub, Describe(::testing::_, ::testing::_, ::testing::_))
        .WillByDefault([this](grpc::ClientContext*, const v1::DescribeRequest&, v1::AgentInfo* info) {
          if (!describe_status.ok()) return describe_status;
          *info = info_;
          return grpc::Status::OK;
        });
    ON_CALL(*stub, HostTargetRaw(::testing::_)).WillByDefault([this](grpc::ClientContext* ctx) {
      return open<v1::TargetCommand, v1::TargetEvent>(ctx, targets_, on_host_target);
    });
    ON_CALL(*stub, RunLoadRaw(::testing::_)).WillByDefault([this](grpc::ClientContext* ctx) {
      return open<v1::LoadCommand, v1::LoadEvent>(ctx, loads_, on_run_load);
    });
    return stub;
  }

  // The streams opened so far, oldest first.
  std::vector<std::shared_ptr<TargetStream>> targets() const {
    std::lock_guard lock(mutex_);
    return targets_;
  }
  std::vector<std::shared_ptr<LoadStream>> loads() const {
    std::lock_guard lock(mutex_);
    return loads_;
  }
  // Ends the stream opened with `ctx`, when it is one of this agent's.
  void cancel(grpc::ClientContext& ctx) {
    std::function<void()> cancel;
    {
      std::lock_guard lock(mutex_);
      auto it = cancels_.find(&ctx);
      if (it == cancels_.end()) return;
      cancel = it->second;
    }
    cancel();
  }
  // Ends every stream: unblocks a controller that would otherwise hang a failing test.
  void cancel_all() {
    for (auto& t : targets()) t->cancel();
    for (auto& l : loads()) l->cancel();
  }

 private:
  template <class W, class R>
  grpc::ClientReaderWriterInterface<W, R>* open(grpc::ClientContext* ctx,
                                                std::vector<std::shared_ptr<Stream<W, R>>>& list,
                                                const std::function<void(Stream<W, R>&)>& script) {
    auto s = std::make_shared<Stream<W, R>>();
    if (script) script(*s);
    {
      std::lock_guard lock(mutex_);
      list.push_back(s);
      cancels_[ctx] = [s] { s->cancel(); };  // a later call may reuse the address
    }
    return new FakeStream<W, R>(s);
  }

  std::string name_;
  v1::AgentInfo info_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<TargetStream>> targets_;
  std::vector<std::shared_ptr<LoadStream>> loads_;
  std::map<grpc::ClientContext*, std::function<void()>> cancels_;
};

// The CallCanceller of a lab of fake agents.
inline CallCanceller canceller(std::vector<FakeAgent*> agents) {
  return [agents](grpc::ClientContext& ctx) {
    for (auto* a : agents) a->cancel(ctx);
  };
}

// Events an agent sends.
inline v1::TargetEvent ready(const std::string& endpoint, uint32_t startup_ms) {
  v1::TargetEvent e;
  e.mutable_ready()->set_endpoint(endpoint);
  e.mutable_ready()->set_startup_ms(startup_ms);
  return e;
}
inline v1::TargetEvent exited(int32_t code, int32_t signal, const std::string& tail) {
  v1::TargetEvent e;
  e.mutable_exited()->set_exit_code(code);
  e.mutable_exited()->set_signal(signal);
  e.mutable_exited()->set_output_tail(tail);
  return e;
}
inline v1::Usage usage(double cpu_pct) {
  v1::Usage u;
  u.set_window_s(1);
  u.set_cpu_pct(cpu_pct);
  return u;
}
inline v1::TargetEvent target_usage(double cpu_pct) {
  v1::TargetEvent e;
  *e.mutable_usage() = usage(cpu_pct);
  return e;
}
inline v1::LoadEvent progress(bool warmup, uint64_t requests) {
  v1::LoadEvent e;
  e.mutable_progress()->set_warmup(warmup);
  e.mutable_progress()->set_requests(requests);
  return e;
}
inline v1::LoadEvent measure_start() {
  v1::LoadEvent e;
  e.mutable_measure_start();
  return e;
}
inline v1::LoadEvent load_result(const v1::LoadResult& r) {
  v1::LoadEvent e;
  *e.mutable_result() = r;
  return e;
}
inline v1::LoadEvent load_usage(double cpu_pct) {
  v1::LoadEvent e;
  *e.mutable_usage() = usage(cpu_pct);
  return e;
}

// A target that is ready at once (started with `build()` first, when given), gives `cpu_pct`
// for the measured window on the final mark, and exits 0 when the controller is done with it.
inline void host_steady_target(TargetStream& t, double cpu_pct, std::function<std::string()> build = {}) {
  t.on_write = [cpu_pct, build](const v1::TargetCommand& cmd, TargetStream& t) {
    if (cmd.has_spec()) {
      if (build) {
        v1::TargetEvent started;
        started.mutable_started()->set_pid(1234);
        started.mutable_started()->set_build(build());
        t.send(started);
      }
      t.send(ready("127.0.0.1:9000", 7));
    }
    if (cmd.has_mark() && cmd.mark().kind() == v1::Mark::FINAL) t.send(target_usage(cpu_pct));
  };
  t.on_writes_done = [](TargetStream& t) {
    t.send(exited(0, 0, ""));
    t.end();
  };
}

}  // namespace loadlab::controller::fake
