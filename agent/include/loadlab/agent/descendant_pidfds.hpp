#pragma once
// Pidfds of a process's descendants, for the process-group path: descendants that left the
// group (setsid, setpgid) are not reached by the group kill, and once their parents die they
// are re-parented and no longer found from the root. So they are taken as pidfds while the
// root is still unreaped, and killed through those: a pid number may by then belong to a
// stranger, a pidfd cannot.
#include <sys/types.h>

#include <vector>

#include "loadlab/agent/proc_reader.hpp"

namespace loadlab::agent {

class DescendantPidfds {
 public:
  DescendantPidfds() = default;
  // Walks the tree of `root`, which the caller keeps unreaped. A pid found in /proc is kept
  // only if, after its pidfd is open, the process is alive and its parent is `root` or a
  // descendant already kept: a pid freed and taken by another process between the listing
  // and the open fails one of the two.
  static DescendantPidfds collect(ProcReader& reader, pid_t root);
  ~DescendantPidfds();
  DescendantPidfds(DescendantPidfds&& other) noexcept;
  DescendantPidfds& operator=(DescendantPidfds&& other) noexcept;
  DescendantPidfds(const DescendantPidfds&) = delete;
  DescendantPidfds& operator=(const DescendantPidfds&) = delete;

  void signal_all(int sig) const;
  size_t size() const { return fds_.size(); }

 private:
  void close_all();
  std::vector<int> fds_;
};

}  // namespace loadlab::agent
