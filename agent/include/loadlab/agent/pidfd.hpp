#pragma once
// Process file descriptors: a pidfd names one process, never a pid number that may since
// belong to another. Thin wrappers over the syscalls (Linux >= 5.3), so that callers need
// neither <sys/pidfd.h> nor the raw syscall numbers.
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

namespace loadlab::agent {

// A pidfd for `pid` (close-on-exec), or -1 with errno (ESRCH: no such process; ENOSYS:
// kernel older than 5.3). It refers to whatever process holds `pid` now: the caller must
// know that this is the process it means (its own unreaped child, or verified afterwards).
int open_pidfd(pid_t pid);

// Sends `sig` to the process; 0 checks that it still exists. False with errno on failure.
bool signal_pidfd(int pidfd, int sig);
// Sends `sig` with a value, as sigqueue() does (the receiver's si_code is SI_QUEUE, its
// si_value `value`). False with errno on failure.
bool queue_signal_pidfd(int pidfd, int sig, sigval value);

// waitid() on a pidfd (P_PIDFD, Linux >= 5.4), with the rusage the kernel fills and glibc's
// wrapper drops. `options` as for waitid (WEXITED, WNOHANG, WNOWAIT). Returns 0 or -1/errno;
// info->si_pid is 0 when WNOHANG found nothing yet.
int wait_pidfd(int pidfd, siginfo_t* info, int options, rusage* ru);

// The same by pid, for kernels without pidfds.
int wait_pid(pid_t pid, siginfo_t* info, int options, rusage* ru);

}  // namespace loadlab::agent
