#pragma once
// Every process of a job, wherever it went, and no zombie left behind.
//
// Orphans. A job's process whose parent exits is re-parented: to the agent when the agent is
// a child subreaper (become_subreaper(), which loadlab-agent sets) or PID 1 in its container,
// else to init. The agent reaps the ones it adopts (reap_strays()); its own children, whose
// exit status their owners wait for (ChildProcess, the start-up probes), are forked through
// fork_own_child() and left alone until released.
//
// Marks. Every job's processes carry LOADLAB_JOB=AGENTPID-N in their environment, inherited
// by each descendant. A process that left the job's process group, session or cgroup (a
// setsid daemon, an orphan, one that wrote its pid into another cgroup.procs) still carries
// it: marked_pids() finds them, kill_marked() stops them when the job stops.
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace loadlab::agent {

// fork(); in the parent the child is registered as one of the agent's own before any reaper
// can see it. The child side gets 0, as from fork(), and must only exec or _exit.
pid_t fork_own_child();
// The owner has reaped `pid`: from now on it is not one of the agent's own.
void release_own_child(pid_t pid);
// Reaps every child of this process that has exited and is not one of its own. Returns how
// many. Any thread.
size_t reap_strays();
// PR_SET_CHILD_SUBREAPER: orphans of the agent's descendants come to the agent. False with
// errno on failure.
bool become_subreaper();

// A fresh mark for one job: "LOADLAB_JOB=AGENTPID-N" (the environment entry).
std::string new_job_mark();
// The processes (other than this one) whose environment holds `mark`, as new_job_mark() made
// it. Processes of other users that this one may not read are not seen.
std::vector<pid_t> marked_pids(const std::string& mark);
// SIGKILL to every process holding `mark`, pass after pass until none is left (a process that
// forks between passes is found at the next one) or `passes` have run. Each is held by a
// pidfd and checked again before the signal, so a pid reused meanwhile is not hit. Returns how
// many were signalled.
size_t kill_marked(const std::string& mark, int passes = 50);

}  // namespace loadlab::agent
