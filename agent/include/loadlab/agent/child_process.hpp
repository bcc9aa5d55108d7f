#pragma once
// A child process in its own process group, with its stdout and stderr captured.
//
// stdout is split into lines that the owner takes with next_line(); stdout and stderr both
// feed a bounded ring of the last lines for error messages. One reader thread per child
// drains both pipes so the child never blocks on a full pipe. terminate() stops the whole
// process group: SIGTERM, then SIGKILL after a grace period, and reaps the child.
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace loadlab::agent {

struct ExitStatus {
  int code = -1;   // exit code, or -1 if killed by a signal
  int signal = 0;  // terminating signal, 0 if it exited
  // From wait4(): the child's whole-life CPU, including descendants it reaped.
  double user_s = 0, system_s = 0;
  long maxrss_kb = 0;
  std::string describe() const;
};

struct SpawnOptions {
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) the agent's environment
  std::string cwd;                                       // "" = the agent's
};

class ChildProcess {
 public:
  // Starts argv[0] (a path) with argv. Throws std::runtime_error with the reason if the
  // process cannot be started (the exec failure is reported through a CLOEXEC pipe).
  static std::unique_ptr<ChildProcess> spawn(const std::vector<std::string>& argv,
                                             const SpawnOptions& options = {});
  ~ChildProcess();  // terminates the group if still running, joins the reader

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  enum class LineStatus { kLine, kTimeout, kEof };
  // Next stdout line (without '\n'); waits up to `timeout`. Any thread, one at a time.
  LineStatus next_line(std::string& line, std::chrono::milliseconds timeout);

  // Non-blocking: the exit status if the child has exited (and reaps it).
  std::optional<ExitStatus> poll_exit();
  // Waits up to `timeout` for the child to exit.
  std::optional<ExitStatus> wait_exit(std::chrono::milliseconds timeout);
  // SIGTERM to the group, SIGKILL to the group after `grace`; returns the exit status.
  ExitStatus terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  // Waits (up to `timeout`) until both pipes are drained to their end, so that the tail
  // of an exited child's output is complete.
  void wait_output_end(std::chrono::milliseconds timeout);
  // The last lines of stdout and stderr, joined by '\n'.
  std::string output_tail(size_t max_lines = 20) const;

 private:
  ChildProcess() = default;
  void reader_loop(int out_fd, int err_fd);
  void push_tail(std::string line);

  pid_t pid_ = -1;
  std::optional<ExitStatus> exit_;
  std::mutex exit_mutex_;
  int wake_fd_ = -1;  // eventfd that stops the reader

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;  // stdout lines not yet taken
  std::deque<std::string> tail_;   // last lines of stdout + stderr
  bool eof_ = false;
  std::thread reader_;
};

}  // namespace loadlab::agent
