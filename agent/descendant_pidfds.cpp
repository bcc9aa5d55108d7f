#include "loadlab/agent/descendant_pidfds.hpp"

#include <unistd.h>

#include <unordered_set>

#include "loadlab/agent/pidfd.hpp"
#include "loadlab/agent/usage_window.hpp"

namespace loadlab::agent {

DescendantPidfds DescendantPidfds::collect(ProcReader& reader, pid_t root) {
  DescendantPidfds out;
  std::unordered_set<pid_t> kept{root};
  auto pids = tree_pids(reader, root);  // parents before their children
  for (size_t i = 1; i < pids.size(); ++i) {
    int fd = open_pidfd(pids[i]);
    if (fd < 0) continue;  // gone already
    auto s = reader.stat(pids[i]);
    // Alive after the read: the stat was this process's, so its parent is known for sure.
    if (s && kept.count(s->ppid) && signal_pidfd(fd, 0)) {
      kept.insert(pids[i]);
      out.fds_.push_back(fd);
    } else {
      close(fd);
    }
  }
  return out;
}

DescendantPidfds::~DescendantPidfds() { close_all(); }

DescendantPidfds::DescendantPidfds(DescendantPidfds&& other) noexcept : fds_(std::move(other.fds_)) {
  other.fds_.clear();
}

DescendantPidfds& DescendantPidfds::operator=(DescendantPidfds&& other) noexcept {
  if (this != &other) {
    close_all();
    fds_ = std::move(other.fds_);
    other.fds_.clear();
  }
  return *this;
}

void DescendantPidfds::signal_all(int sig) const {
  for (int fd : fds_) signal_pidfd(fd, sig);
}

void DescendantPidfds::close_all() {
  for (int fd : fds_) close(fd);
  fds_.clear();
}

}  // namespace loadlab::agent
