#include "loadlab/agent/pidfd.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace loadlab::agent {

namespace {
// <linux/wait.h>'s P_PIDFD; glibc 2.36's idtype_t does not name it yet.
constexpr int kPidfdIdType = 3;
}  // namespace

int open_pidfd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

bool signal_pidfd(int pidfd, int sig) { return syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0; }

bool queue_signal_pidfd(int pidfd, int sig, sigval value) {
  siginfo_t info{};
  info.si_signo = sig;
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value = value;
  return syscall(SYS_pidfd_send_signal, pidfd, sig, &info, 0) == 0;
}

int wait_pidfd(int pidfd, siginfo_t* info, int options, rusage* ru) {
  info->si_pid = 0;
  return static_cast<int>(syscall(SYS_waitid, kPidfdIdType, pidfd, info, options, ru));
}

int wait_pid(pid_t pid, siginfo_t* info, int options, rusage* ru) {
  info->si_pid = 0;
  return static_cast<int>(syscall(SYS_waitid, P_PID, pid, info, options, ru));
}

}  // namespace loadlab::agent
