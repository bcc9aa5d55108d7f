#pragma once
// Every process of a job, wherever it went, and no zombie left behind.
//
// Orphans. A job's first process is a child subreaper (ChildProcess sets it before exec): a
// process of the job whose parent exits is re-parented to it, so while it lives every process
// of the job is in its tree, whatever session, group or environment it took. Once the first
// process has exited, what is left of its job is re-parented to the agent (a child subreaper
// too, become_subreaper(), which loadlab-agent sets; or PID 1 in its container). So every
// process the agent adopted is the remains of a job whose first process is gone: kill_adopted()
// stops them when a job stops, and the agent reaps them (reap_strays()). Its own children,
// whose exit status their owners wait for (ChildProcess, the start-up probes), are forked
// through fork_own_child() and left alone until released.
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
// SIGKILL to every living process this one adopted (a child that is not one of its own),
// pass after pass, since the children of one killed come to this process in turn, until none
// is left or `passes` have run. Each is held by a pidfd. Returns how many were signalled. Any
// thread. Does nothing unless this process is a child subreaper or PID 1: elsewhere a child
// that is not one of its own was started by other code of the process.
size_t kill_adopted(int passes = 50);
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
