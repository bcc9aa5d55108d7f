#pragma once
// `loadlab-agent --job-user NAME`: the agent's jobs (targets, load workers, external clients)
// run as another user of the machine, so that a target under test cannot read what the agent
// can (its --token-file and --tls-key, the other jobs' files). The agent switches to the user
// in the child, after it joined its cgroups and before exec, and clears the job's capabilities
// (job_credentials.hpp); the agent needs root, or the capabilities
// missing_job_user_capabilities() names, for that.
#include <sys/types.h>

#include <string>
#include <vector>

namespace loadlab::agent {

struct JobUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // its supplementary groups, its primary group among them
  std::string home;           // HOME, USER and LOGNAME of its jobs say who they run as
};

// NAME (a user of this machine, not root and not the agent's own user) with its groups.
// Throws InputError naming `flag` and what is wrong.
[[nodiscard]] JobUser resolve_job_user(const std::string& name, const std::string& flag);

// A capability set of this process ("CapEff", "CapAmb", ... of /proc/self/status), a bit per
// capability as linux/capability.h numbers them; 0 when it cannot be read.
[[nodiscard]] unsigned long long own_capabilities(const std::string& set);

// What this process lacks to run its jobs as another user, none for root: CAP_SETUID and
// CAP_SETGID (to switch), CAP_KILL (to signal and stop the job's processes, another user's),
// CAP_CHOWN (to give the job its files: a body, a certificate), in its effective set.
[[nodiscard]] std::vector<std::string> missing_job_user_capabilities();

// Whether `user` can run `program` (its --version, as a job would run it): "" if it can, else
// why not ("as nobody, cannot execute /x/loadlab-target: Permission denied"). For the agent's start, so
// that a folder the user cannot reach fails there and not at every job.
[[nodiscard]] std::string check_job_user_runs(const JobUser& user, const std::string& program);

}  // namespace loadlab::agent
