#pragma once
// A target's user-space instructions (TargetSpec.instructions, docs/instructions.md): under
// valgrind's callgrind for the target's whole life (CallgrindProbe), or with the CPU's
// instructions:u counter on its threads over a window (InstructionCounters). Internal.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/agent/job_user.hpp"

namespace loadlab::agent {

// valgrind on the agent's PATH (absolute), or "" when there is none.
std::string find_valgrind();

// What a count gave: the instructions, or why there are none; callgrind's output of the
// process that ran the most (empty when none, or over limits::kMaxProfileBytes).
struct InstructionCount {
  std::optional<uint64_t> instructions;
  std::string unavailable;
  std::string profile;
};

// The target under callgrind: wrap() its command line; once every process of it has exited,
// collect() sums the instructions of each (callgrind writes one file per process at its exit:
// --trace-children follows the built-in target's exec of its TLS and HTTP/3 binaries and a
// catalog target's scripts). The files go to a private folder removed with the probe, which a
// job user (`user`) may write to and the agent's group read; the agent takes each file back
// (chown: CAP_CHOWN, which a non-root agent has for --job-user) before reading it.
class CallgrindProbe {
 public:
  // Throws EnvironmentError when the folder cannot be made.
  CallgrindProbe(std::string valgrind, const JobUser* user);
  ~CallgrindProbe();
  CallgrindProbe(const CallgrindProbe&) = delete;
  CallgrindProbe& operator=(const CallgrindProbe&) = delete;

  [[nodiscard]] std::vector<std::string> wrap(const std::vector<std::string>& argv) const;
  [[nodiscard]] InstructionCount collect() const;

 private:
  std::string valgrind_;
  std::string dir_;
};

// The sum of callgrind's "summary:" (or "totals:") line of an output file's text; nullopt when
// it has neither.
std::optional<uint64_t> callgrind_total(const std::string& text);

// instructions:u counters on every thread of a job's processes: open() at the window's start,
// read() at its end. Threads a counted thread starts later are counted with it (inherit).
class InstructionCounters {
 public:
  InstructionCounters() = default;
  ~InstructionCounters();
  InstructionCounters(const InstructionCounters&) = delete;
  InstructionCounters& operator=(const InstructionCounters&) = delete;

  // Opens one counter per thread of `pids`, closing any from an earlier window; false, with
  // reason(), when a counter cannot be opened (no hardware counters, perf_event_paranoid).
  bool open(const std::vector<pid_t>& pids);
  // The instructions since open(); nullopt with reason() when there are no counters.
  std::optional<uint64_t> read();
  const std::string& reason() const { return reason_; }

 private:
  void close_all();
  std::vector<int> fds_;
  std::string reason_ = "no window was opened";
};

}  // namespace loadlab::agent
