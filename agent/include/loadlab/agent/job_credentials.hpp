#pragma once
// What a job's process gives up between fork and exec, so that a job (code the lab does not
// trust) cannot reach the agent that started it: every capability, the way back to the
// agent's uid, and every descriptor of the agent.
//
// Each function runs in the child after fork: raw system calls only (async-signal-safe, no
// allocation). Each returns 0, or the errno of the step that failed; the job must then not
// run.
#include <sys/types.h>

namespace loadlab::agent {

// Drops every capability of the bounding set this process may drop (all of them where it
// holds CAP_SETPCAP: root, or an agent given it). Call before the change of user, which
// clears the effective set that allows it. EPERM (no CAP_SETPCAP) is not an error: the
// empty permitted set and no_new_privs below keep an exec from gaining what is left.
int drop_capability_bounding_set();

// After the change of user (if any): clears the ambient, inheritable, permitted and effective
// capability sets and sets no_new_privs, so that neither this process nor what it execs
// holds or regains a capability (a setuid binary, file capabilities, root's rule at exec).
int clear_capabilities();

// With `job_uid` the job's user and `agent_uid` the agent's (different): the change of user
// cannot be undone. EPERM-like failure (returns EACCES) if setuid(agent_uid) succeeds, or if
// a capability is still held.
int check_no_way_back(uid_t agent_uid);

// Marks every descriptor above stdio close-on-exec (close_range with CLOSE_RANGE_CLOEXEC, or,
// on kernels before 5.11, each entry of /proc/self/fd read with getdents64), so that exec
// leaves the job only 0, 1 and 2. Descriptors stay open until the exec itself: a pipe that
// reports a failed exec keeps working.
int mark_descriptors_cloexec();

}  // namespace loadlab::agent
