#include "loadlab/agent/job_user.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/shared/input_error.hpp"

namespace loadlab::agent {

JobUser resolve_job_user(const std::string& name, const std::string& flag) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  const int rc = getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0 || found == nullptr)
    throw InputError(flag, "\"" + name + "\" is not a user of this machine (getent passwd " + name + ")");
  JobUser user;
  user.name = name;
  user.uid = found->pw_uid;
  user.gid = found->pw_gid;
  user.home = found->pw_dir != nullptr ? found->pw_dir : "/";
  if (user.uid == 0)
    throw InputError(flag, "\"" + name + "\" is root; jobs must run as a user without privileges");
  if (user.uid == geteuid())
    throw InputError(
        flag, "\"" + name + "\" is the agent's own user; name another, which cannot read the agent's files");
  int count = 64;
  user.groups.resize(static_cast<std::size_t>(count));
  while (getgrouplist(name.c_str(), user.gid, user.groups.data(), &count) < 0)
    user.groups.resize(static_cast<std::size_t>(count));
  user.groups.resize(static_cast<std::size_t>(count));
  return user;
}

unsigned long long own_capabilities(const std::string& set) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(set + ":", 0) == 0) return std::stoull(line.substr(set.size() + 1), nullptr, 16);
  return 0;
}

std::vector<std::string> missing_job_user_capabilities() {
  if (geteuid() == 0) return {};
  const unsigned long long caps = own_capabilities("CapEff");
  // The capabilities' numbers, from linux/capability.h.
  const std::pair<int, const char*> needed[] = {
      {6, "CAP_SETGID"}, {7, "CAP_SETUID"}, {5, "CAP_KILL"}, {0, "CAP_CHOWN"}};
  std::vector<std::string> missing;
  for (const auto& [bit, name] : needed)
    if ((caps & (1ULL << bit)) == 0) missing.emplace_back(name);
  return missing;
}

std::string check_job_user_runs(const JobUser& user, const std::string& program) {
  SpawnOptions options;
  options.user = &user;
  try {
    auto child = ChildProcess::spawn({program, "--version"}, options);
    const auto status = child->wait_exit(std::chrono::seconds(10));
    if (status && status->code == 0) return "";
    std::string line, output;
    while (child->next_line(line, std::chrono::milliseconds(100)) == ChildProcess::LineStatus::kLine)
      output = line;
    return user.name + " cannot run " + program + (output.empty() ? "" : ": " + output);
  } catch (const std::exception& e) {
    return "as " + user.name + ", " + e.what();
  }
}

}  // namespace loadlab::agent
