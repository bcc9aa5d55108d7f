#pragma once
// The project's one way to report that the machine or the lab refused what was asked, beside
// InputError for input that is wrong: a folder, port lock, cgroup or socket that cannot be made
// or written, a fork or pipe that failed, no reachable agent. `what()` names the thing and the
// reason ("cannot make job cgroup /sys/fs/cgroup/...: Permission denied"). The edges turn it into
// their own status: the controller's for a lab that cannot be used (README's table), the agent's
// FAILED_PRECONDITION or INTERNAL for the job, exit status 1 in the worker programs.
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace loadlab {

class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "`what`: the system's reason for `error`" (an errno value), e.g. system_failure("fork").
[[nodiscard]] inline EnvironmentError system_failure(const std::string& what, int error = errno) {
  return EnvironmentError(what + ": " + std::strerror(error));
}

}  // namespace loadlab
