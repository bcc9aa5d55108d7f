#pragma once
// git run without a shell and without what a repository's own config or content could make it
// do: the controller asks the scenario's repository about its state, the agent fetches and
// checks out the commits of a catalog target's source (docs/security.md).
//
// Every call runs with safe.bareRepository=explicit (a committed folder holding HEAD, objects/
// and refs/ is not taken for a repository, nor is its config obeyed), core.fsmonitor and
// core.hooksPath emptied, no system config, no terminal prompt, literal pathspecs and no
// optional locks; the variables that point git at another repository, index or config are
// dropped from its environment. Arguments that come from a user (a ref) are placed after
// `--end-of-options` by the caller.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace loadlab {

// Starts git (argv[0] "git", found on PATH) with `envp`, stdin on /dev/null, stdout on `out`,
// stderr on `out` too or /dev/null; returns its pid (-1 with errno on failure). The default is
// posix_spawnp; a process that reaps the children it does not know (the agent) forks git as one
// of its own instead. `reaped(pid)` is called once run_git has reaped it.
struct GitLauncher {
  std::function<pid_t(char* const argv[], char* const envp[], int out, bool stderr_to_out)> spawn;
  std::function<void(pid_t)> reaped;
};

struct GitOptions {
  // Also leave out the user's global config (~/.gitconfig): the agent's git depends on
  // nothing of its host's user.
  bool no_global_config = false;
  // Instead, this file as the global config (the agent's own: which repositories of another
  // user it trusts, safe.directory); "" = none.
  std::string global_config;
  // stderr joins stdout (for a message that says why); otherwise it goes to /dev/null.
  bool stderr_to_out = false;
  // Killed (SIGKILL) when it runs longer: a repository URL that does not answer.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  GitLauncher launcher;  // empty: posix_spawnp
};

struct GitOutput {
  bool ok = false;  // git ran and exited 0
  bool timed_out = false;
  std::string out;  // its stdout (at most 1 MiB), trailing newlines removed
};

// Why `ref` cannot be handed to git as a user's ref (empty, an option: begins with '-', longer
// than limits::kMaxRefBytes, a space or a control character), or "" when it can: the scenario
// checker and the agent ask the same.
std::string ref_problem(const std::string& ref);

// Runs `git -C dir ARGS` (`dir` empty: no -C).
GitOutput run_git(const std::filesystem::path& dir, const std::vector<std::string>& args,
                  const GitOptions& options = {});

}  // namespace loadlab
