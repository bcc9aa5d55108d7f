#include "run/provenance.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

extern char** environ;

namespace loadlab::controller {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxGitOutput = 1 << 20;  // more is not needed: a commit, or "something changed"

struct GitOutput {
  bool ok = false;  // git ran and exited 0
  std::string out;  // its stdout, trailing newlines removed
};

// The caller's environment without what would point git at another repository or config, and
// without the system config (another user's file may say what a repository's config says).
std::vector<std::string> git_environment() {
  static const std::array<const char*, 9> dropped = {
      "GIT_DIR=",        "GIT_WORK_TREE=",        "GIT_INDEX_FILE=",
      "GIT_COMMON_DIR=", "GIT_OBJECT_DIRECTORY=", "GIT_NAMESPACE=",
      "GIT_CONFIG=",     "GIT_CONFIG_NOSYSTEM=",  "GIT_ALTERNATE_OBJECT_DIRECTORIES="};
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string var = *e;
    bool drop = false;
    for (const char* d : dropped) drop = drop || var.rfind(d, 0) == 0;
    if (!drop) env.push_back(var);
  }
  env.push_back("GIT_CONFIG_NOSYSTEM=1");
  env.push_back("GIT_TERMINAL_PROMPT=0");
  return env;
}

// Runs git in `dir` with `args`, without a shell (posix_spawnp, an argv), stdin and stderr on
// /dev/null, with what a repository's own config or content must not change set on its command
// line (provenance.hpp).
GitOutput git(const fs::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git",
                                   "-C",
                                   dir.string(),
                                   "-c",
                                   "safe.bareRepository=explicit",
                                   "-c",
                                   "core.fsmonitor=",
                                   "-c",
                                   "core.hooksPath=/dev/null",
                                   "--literal-pathspecs",
                                   "--no-optional-locks"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto env = git_environment();
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);

  GitOutput result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, "git", &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::array<char, 4096> buf{};
  for (ssize_t n; spawned == 0 && (n = read(fds[0], buf.data(), buf.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (result.out.size() < kMaxGitOutput) result.out.append(buf.data(), static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  if (spawned != 0) return {};
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  while (!result.out.empty() && (result.out.back() == '\n' || result.out.back() == '\r'))
    result.out.pop_back();
  return result;
}

// What git takes for a repository's folder (HEAD, objects/, refs/), with no .git of its own.
bool looks_bare(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "HEAD", ec) && fs::is_directory(dir / "objects", ec) &&
         fs::is_directory(dir / "refs", ec) && !fs::exists(dir / ".git", ec);
}

// The top folder of the work tree holding `folder` (canonical), by git's discovery. Git refuses
// a folder that looks like a bare repository (safe.bareRepository=explicit) and stops there; the
// search goes on above the deepest such folder, as a file in it belongs to the work tree around.
std::optional<fs::path> work_tree_of(fs::path folder) {
  while (!folder.empty()) {
    if (auto top = git(folder, {"rev-parse", "--show-toplevel"}); top.ok && !top.out.empty())
      return fs::path(top.out);
    fs::path bare;
    for (fs::path d = folder; bare.empty(); d = d.parent_path()) {
      if (looks_bare(d)) bare = d;
      if (d == d.parent_path()) break;
    }
    if (bare.empty() || bare == bare.parent_path()) return std::nullopt;
    folder = bare.parent_path();
  }
  return std::nullopt;
}

fs::path canonical_or_absolute(const std::string& path) {
  std::error_code ec;
  auto c = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path) : c;
}

}  // namespace

ScenarioRepository::ScenarioRepository(const std::string& scenario) {
  auto top = work_tree_of(canonical_or_absolute(scenario).parent_path());
  if (!top) return;
  auto commit = git(*top, {"rev-parse", "--verify", "--quiet", "HEAD"});
  if (!commit.ok || commit.out.empty()) return;  // no commit yet: nothing to name
  top_ = *top;
  commit_ = commit.out;
  const auto tree = git(top_, {"status", "--porcelain", "--untracked-files=no"});
  tree_dirty_ = !tree.ok || !tree.out.empty();  // unknown is not clean
}

nlohmann::json ScenarioRepository::provenance(const std::string& path) const {
  std::error_code ec;
  nlohmann::json j = {
      {"path", fs::absolute(path, ec).string()}, {"sha256", sha256_file(path)}, {"git", nullptr}};
  if (top_.empty()) return j;
  const fs::path relative = canonical_or_absolute(path).lexically_relative(top_);
  if (relative.empty() || *relative.begin() == ".." || *relative.begin() == ".git")
    return j;  // not in the work tree
  // Changed, untracked or ignored: the commit does not hold this file's content.
  const auto status = git(top_, {"status", "--porcelain", "--ignored", "--", relative.string()});
  j["git"] = {{"commit", commit_}, {"dirty", !status.ok || !status.out.empty()}, {"tree_dirty", tree_dirty_}};
  return j;
}

nlohmann::json file_provenance(const std::string& path) { return ScenarioRepository(path).provenance(path); }

}  // namespace loadlab::controller
