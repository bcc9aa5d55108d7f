#pragma once
// Ends a call that holds the agent without progressing: one whose peer keeps it waiting
// (no command arrives, or an event is not taken off the wire) longer than the idle
// timeout, or that runs past its lifetime. Ending = cancelling the call, which makes its
// job stop its child and free its slot. Internal to the agent library.
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "loadlab/agent/job_slot.hpp"

namespace loadlab::agent {

class CallDeadlines {
 public:
  using Clock = std::chrono::steady_clock;
  // `what` names the call in the log ("HostTarget from ipv4:…"); an ending is counted in
  // `expiries`. No lifetime until limit_lifetime().
  CallDeadlines(grpc::ServerContext& ctx, std::chrono::milliseconds idle, std::string what,
                LeaseExpiries& expiries);
  ~CallDeadlines();
  CallDeadlines(const CallDeadlines&) = delete;
  CallDeadlines& operator=(const CallDeadlines&) = delete;

  // From now on the call is cancelled `lifetime` after this point.
  void limit_lifetime(std::chrono::milliseconds lifetime);

  // While alive, the call is waiting on its peer: to read its next command, or to take an
  // event off the wire. A read and a write may wait at once (a target's sampler thread
  // writes while the job's thread reads), so each direction has its own clock.
  class Wait {
   public:
    explicit Wait(std::atomic<int64_t>& since) : since_(since) { since_.store(now_ns()); }
    ~Wait() { since_.store(0); }
    Wait(const Wait&) = delete;
    Wait& operator=(const Wait&) = delete;

   private:
    std::atomic<int64_t>& since_;
  };
  [[nodiscard]] Wait reading() { return Wait(reading_since_); }
  Wait writing() { return Wait(writing_since_); }

 private:
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }
  void watch();

  grpc::ServerContext& ctx_;
  const std::chrono::milliseconds idle_;
  const std::string what_;
  LeaseExpiries& expiries_;
  std::atomic<int64_t> reading_since_{0};  // 0 = not waiting
  std::atomic<int64_t> writing_since_{0};  // writes are serialised by the jobs: one at a time
  std::atomic<int64_t> end_of_life_{0};    // 0 = none
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

// A job's stream whose every Read and Write counts as waiting on the peer.
template <class W, class R>
class WatchedStream final : public grpc::ServerReaderWriterInterface<W, R> {
 public:
  WatchedStream(grpc::ServerReaderWriterInterface<W, R>& inner, CallDeadlines& deadlines)
      : inner_(inner), deadlines_(deadlines) {}
  void SendInitialMetadata() override { inner_.SendInitialMetadata(); }
  bool NextMessageSize(uint32_t* sz) override { return inner_.NextMessageSize(sz); }
  bool Read(R* msg) override {
    auto w = deadlines_.reading();
    return inner_.Read(msg);
  }
  using grpc::internal::WriterInterface<W>::Write;
  bool Write(const W& msg, grpc::WriteOptions options) override {
    auto w = deadlines_.writing();
    return inner_.Write(msg, options);
  }

 private:
  grpc::ServerReaderWriterInterface<W, R>& inner_;
  CallDeadlines& deadlines_;
};

}  // namespace loadlab::agent
