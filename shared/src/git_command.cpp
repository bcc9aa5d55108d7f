#include "loadlab/shared/git_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "loadlab/shared/limits.hpp"

extern char** environ;

namespace loadlab {

namespace {

constexpr size_t kMaxGitOutput = 1 << 20;  // a commit list, a sha, or "something changed"

// The caller's environment without what would point git at another repository or config, and
// without the system config (another user's file may say what a repository's config says).
std::vector<std::string> git_environment(const GitOptions& options) {
  static const std::array<const char*, 10> dropped = {
      "GIT_DIR=",          "GIT_WORK_TREE=",        "GIT_INDEX_FILE=",
      "GIT_COMMON_DIR=",   "GIT_OBJECT_DIRECTORY=", "GIT_NAMESPACE=",
      "GIT_CONFIG=",       "GIT_CONFIG_NOSYSTEM=",  "GIT_ALTERNATE_OBJECT_DIRECTORIES=",
      "GIT_CONFIG_GLOBAL="};
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string var = *e;
    bool drop = false;
    for (const char* d : dropped) drop = drop || var.rfind(d, 0) == 0;
    if (!drop) env.push_back(var);
  }
  env.push_back("GIT_CONFIG_NOSYSTEM=1");
  env.push_back("GIT_TERMINAL_PROMPT=0");
  if (!options.global_config.empty())
    env.push_back("GIT_CONFIG_GLOBAL=" + options.global_config);
  else if (options.no_global_config)
    env.push_back("GIT_CONFIG_GLOBAL=/dev/null");
  return env;
}

std::vector<std::string> git_argv(const std::filesystem::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git"};
  if (!dir.empty()) argv.insert(argv.end(), {"-C", dir.string()});
  argv.insert(argv.end(), {"-c", "safe.bareRepository=explicit", "-c", "core.fsmonitor=", "-c",
                           "core.hooksPath=/dev/null", "--literal-pathspecs", "--no-optional-locks"});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Reads `fd` to its end into `out` (bounded) until `deadline`; false when the deadline came.
bool read_until(int fd, std::string& out, std::chrono::steady_clock::time_point deadline) {
  std::array<char, 4096> buf{};
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (out.size() < kMaxGitOutput) out.append(buf.data(), static_cast<size_t>(n));
  }
}

pid_t posix_spawn_git(char* const argv[], char* const envp[], int out, bool stderr_to_out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  if (stderr_to_out)
    posix_spawn_file_actions_adddup2(&actions, out, 2);
  else
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, "git", &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    errno = spawned;
    return -1;
  }
  return pid;
}

}  // namespace

std::string ref_problem(const std::string& ref) {
  if (ref.empty()) return "must name a commit (a branch, a tag or a sha)";
  if (ref[0] == '-') return "must not begin with '-' (got \"" + ref.substr(0, 64) + "\")";
  if (ref.size() > limits::kMaxRefBytes)
    return "must be at most " + std::to_string(limits::kMaxRefBytes) + " bytes";
  for (char c : ref)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ')
      return "must hold no spaces or control characters";
  return "";
}

GitOutput run_git(const std::filesystem::path& dir, const std::vector<std::string>& args,
                  const GitOptions& options) {
  const auto argv = git_argv(dir, args);
  const auto env = git_environment(options);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);

  GitOutput result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return result;
  const pid_t pid = options.launcher.spawn
                        ? options.launcher.spawn(cargv.data(), cenv.data(), fds[1], options.stderr_to_out)
                        : posix_spawn_git(cargv.data(), cenv.data(), fds[1], options.stderr_to_out);
  const int spawn_errno = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    result.out = "cannot run git: " + std::string(strerror(spawn_errno));
    return result;
  }
  result.timed_out = !read_until(fds[0], result.out, std::chrono::steady_clock::now() + options.timeout);
  close(fds[0]);
  if (result.timed_out) kill(pid, SIGKILL);
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (options.launcher.reaped) options.launcher.reaped(pid);
  // Reaped by someone else (waitpid failed): its status is unknown, so not a success.
  result.ok = waited == pid && !result.timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  while (!result.out.empty() && (result.out.back() == '\n' || result.out.back() == '\r'))
    result.out.pop_back();
  return result;
}

}  // namespace loadlab
