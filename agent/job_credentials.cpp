#include "loadlab/agent/job_credentials.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace loadlab::agent {

namespace {

// capget/capset's two 32-bit words of each set (version 3: 64 capabilities).
struct CapSets {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
};

bool holds_no_capability() {
  CapSets caps;
  if (syscall(SYS_capget, &caps.header, caps.data) != 0) return false;
  for (const auto& d : caps.data)
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) return false;
  // An ambient capability would be lost with the permitted one, but say so if one is left.
  for (unsigned long cap = 0; cap <= 63; ++cap) {
    const int r = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
    if (r < 0) break;  // past the kernel's last capability (EINVAL), or no ambient sets
    if (r == 1) return false;
  }
  return true;
}

// linux_dirent64, as getdents64 fills it.
struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

// The descriptor number `name` spells; -1 for "." and "..".
int descriptor_number(const char* name) {
  if (*name < '0' || *name > '9') return -1;
  int n = 0;
  for (; *name >= '0' && *name <= '9'; ++name) n = n * 10 + (*name - '0');
  return *name == '\0' ? n : -1;
}

// For kernels without close_range: every open descriptor above stdio, from /proc/self/fd.
int mark_listed_descriptors_cloexec() {
  const int dir = static_cast<int>(syscall(SYS_open, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir < 0) return errno;
  alignas(Dirent64) char buf[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n < 0) {
      const int e = errno;
      close(dir);
      return e;
    }
    if (n == 0) break;
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const Dirent64*>(buf + at);
      const int fd = descriptor_number(entry->name);
      if (fd > 2 && fd != dir) fcntl(fd, F_SETFD, FD_CLOEXEC);
      at += entry->reclen;
    }
  }
  close(dir);
  return 0;
}

}  // namespace

int drop_capability_bounding_set() {
  for (unsigned long cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) return 0;  // past the kernel's last capability
    if (errno == EPERM) return 0;   // no CAP_SETPCAP: the bounding set stays, unused
    return errno;
  }
  return 0;
}

int clear_capabilities() {
  // Kernels before 4.3 have no ambient set (EINVAL): nothing to clear there.
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  CapSets none;  // all zero: dropping a capability is always allowed
  if (syscall(SYS_capset, &none.header, none.data) != 0) return errno;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  return 0;
}

int check_no_way_back(uid_t agent_uid) {
  if (!holds_no_capability()) return EACCES;
  if (syscall(SYS_setuid, agent_uid) == 0) return EACCES;  // the raw call: this thread alone
  return 0;
}

int mark_descriptors_cloexec() {
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
  if (errno != ENOSYS && errno != EINVAL) return errno;  // EINVAL: a kernel without the flag
  return mark_listed_descriptors_cloexec();
}

}  // namespace loadlab::agent
