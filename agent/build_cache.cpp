#include "loadlab/agent/build_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "loadlab/agent/job_processes.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/git_command.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/search_path.hpp"
#include "loadlab/shared/sha256.hpp"

namespace loadlab::agent {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr size_t kLogTailLines = 20;
constexpr const char* kCancelled = "cancelled";  // not remembered as a failure

// git on the agent's PATH, found before the fork (the child only execs).
// git as one of the agent's own children (fork_own_child): the agent reaps every child it does
// not know (reap_strays), which would take git's exit status from run_git.
pid_t spawn_own_git(char* const argv[], char* const envp[], int out, bool stderr_to_out) {
  static const std::string found = find_on_path("git");
  static const std::string program = found.empty() ? "/usr/bin/git" : found;
  const pid_t pid = fork_own_child();
  if (pid != 0) return pid;
  const int devnull = open("/dev/null", O_RDWR);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(stderr_to_out ? out : devnull, 2) < 0)
    _exit(127);
  execve(program.c_str(), argv, envp);
  _exit(127);
}

GitOptions agent_git(std::chrono::milliseconds timeout = std::chrono::minutes(10)) {
  GitOptions o;
  o.launcher = {spawn_own_git, release_own_child};
  o.no_global_config = true;
  o.stderr_to_out = true;
  o.timeout = timeout;
  return o;
}

bool is_full_sha(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

void check_ref(const std::string& ref, const char* field) {
  if (auto why = ref_problem(ref); !why.empty()) throw InputError(field, why);
}

// Every file and folder under `root`, deepest first (so a folder follows what it holds).
std::vector<fs::path> tree_of(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec))
    out.push_back(it->path());
  std::sort(out.begin(), out.end(),
            [](const fs::path& a, const fs::path& b) { return a.string() > b.string(); });
  out.push_back(root);
  return out;
}

// Every file of `root` owned by `uid`:`gid` (symbolic links themselves, not their targets).
void chown_tree(const fs::path& root, uid_t uid, gid_t gid) {
  for (auto& p : tree_of(root))
    if (lchown(p.c_str(), uid, gid) != 0 && geteuid() == 0)
      throw EnvironmentError("cannot chown " + p.string() + ": " + strerror(errno));
}

// The build, sealed: the agent's, no write bit and no set-id bit anywhere.
void seal_tree(const fs::path& root) {
  if (geteuid() == 0) chown_tree(root, getuid(), getgid());
  for (auto& p : tree_of(root)) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
    chmod(p.c_str(), st.st_mode & 0555);
  }
}

// Writable again by the agent, to be removed (a non-root agent cannot remove from a folder
// without its write bit).
void remove_tree(const fs::path& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) return;
  for (auto& p : tree_of(root)) {
    struct stat st {};
    if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) chmod(p.c_str(), (st.st_mode & 07777) | 0700);
  }
  fs::remove_all(root, ec);
}

uint64_t tree_bytes(const fs::path& root) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0) bytes += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return bytes;
}

std::string last_lines(const fs::path& file, size_t n) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.erase(lines.begin());
  }
  std::string out;
  for (auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

v1::Commit commit_of(const fs::path& mirror, const std::string& sha) {
  auto out = run_git(
      "", {"--git-dir=" + mirror.string(), "log", "-1", "--format=%H%x00%ct%x00%s", "--end-of-options", sha},
      agent_git());
  v1::Commit c;
  std::istringstream in(out.out);
  std::string time;
  std::getline(in, *c.mutable_sha(), '\0');
  std::getline(in, time, '\0');
  std::getline(in, *c.mutable_subject());
  c.set_time_unix(time.empty() ? 0 : std::stoll(time));
  return c;
}

}  // namespace

std::string unfit_cache_folder(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return dir + ": " + strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a folder";
  if (st.st_uid != geteuid())
    return dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to the agent's user";
  if (st.st_mode & 022) return dir + " is writable by other users (chmod go-w)";
  return "";
}

BuildCache::BuildCache(std::string dir, int64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

std::string BuildCache::key_of(const TargetSource& source, const std::string& commit) {
  Sha256 h;
  h.update(source.repository + std::string(1, '\0') + commit);
  for (auto& a : source.build) h.update(std::string(1, '\0') + a);
  return h.hex().substr(0, 24);
}

std::string BuildCache::mirror_path(const TargetSource& source) const {
  return dir_ + "/repos/" + sha256_text(source.repository).substr(0, 16) + ".git";
}

void BuildCache::ensure_root() {
  std::error_code ec;
  fs::create_directories(fs::path(dir_).parent_path(), ec);  // ~/.cache on a new account
  for (const char* sub : {"", "/repos", "/builds", "/failed"}) {
    const std::string d = dir_ + sub;
    if (!fs::exists(d, ec) && mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
      throw EnvironmentError("cannot make the build cache folder " + d + ": " + strerror(errno));
    if (auto why = unfit_cache_folder(d); !why.empty())
      throw EnvironmentError("the build cache cannot be trusted: " + why);
  }
}

std::string BuildCache::mirror(const TargetSource& source) {
  ensure_root();
  const std::string m = mirror_path(source);
  std::error_code ec;
  if (!fs::exists(m, ec)) {
    auto init = run_git("", {"init", "--quiet", "--bare", "--", m}, agent_git());
    if (!init.ok) throw EnvironmentError("cannot make the mirror " + m + ": " + init.out);
  }
  // A folder of another user (the lab's repository, not the agent's): git fetches from it only
  // when the agent's own global config names it safe. The catalog's owner listed it.
  GitOptions fetch_options = agent_git();
  if (source.repository.find("://") == std::string::npos) {
    fetch_options.global_config = dir_ + "/gitconfig";
    auto quoted = [](std::string v) {
      std::string q = "\"";
      for (char c : v) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
      return q + "\"";
    };
    std::ofstream(fetch_options.global_config)
        << "[safe]\n\tdirectory = " << quoted(source.repository)
        << "\n\tdirectory = " << quoted(source.repository + "/.git") << "\n";
  }
  auto fetched = run_git("",
                         {"--git-dir=" + m, "fetch", "--quiet", "--prune", "--no-write-fetch-head", "--",
                          source.repository, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"},
                         fetch_options);
  if (!fetched.ok)
    throw EnvironmentError("cannot fetch " + source.repository +
                           (fetched.timed_out ? ": no answer in 10 minutes" : ": " + fetched.out));
  return m;
}

v1::ResolvedCommit BuildCache::resolve(const TargetSource& source, const std::string& ref,
                                       const std::string& since) {
  check_ref(ref, "ref");
  if (!since.empty()) check_ref(since, "since");
  std::lock_guard lock(mirror_mutex_);
  const std::string m = mirror(source);
  auto sha_of = [&](const std::string& r, const char* field) {
    auto out = run_git(
        "", {"--git-dir=" + m, "rev-parse", "--verify", "--quiet", "--end-of-options", r + "^{commit}"},
        agent_git());
    if (!out.ok || !is_full_sha(out.out))
      throw InputError(field, "\"" + r + "\" names no commit of " + source.repository);
    return out.out;
  };
  v1::ResolvedCommit resolved;
  *resolved.mutable_commit() = commit_of(m, sha_of(ref, "ref"));
  if (since.empty()) return resolved;
  *resolved.mutable_since() = commit_of(m, sha_of(since, "since"));
  auto list = run_git("",
                      {"--git-dir=" + m, "rev-list", "--first-parent", "--reverse", "--end-of-options",
                       "^" + resolved.since().sha(), resolved.commit().sha()},
                      agent_git());
  std::istringstream in(list.out);
  for (std::string sha; std::getline(in, sha);)
    if (is_full_sha(sha) && sha != resolved.commit().sha()) *resolved.add_between() = commit_of(m, sha);
  return resolved;
}

std::optional<Build> BuildCache::cached(const std::string& key) {
  const fs::path folder = fs::path(dir_) / "builds" / key;
  std::error_code ec;
  if (!fs::exists(folder / "meta.json", ec)) return std::nullopt;
  fs::last_write_time(folder / "meta.json", fs::file_time_type::clock::now(), ec);  // recently used
  auto meta = nlohmann::json::parse(std::ifstream(folder / "meta.json"), nullptr, false);
  Build b{(folder / "tree").string(), true, 0, 0, key};
  if (meta.is_object()) {
    b.seconds = meta.value("seconds", 0.0);
    b.bytes = meta.value("bytes", uint64_t{0});
  }
  return b;
}

Build BuildCache::get(const TargetSource& source, const std::string& commit, const SpawnOptions& job,
                      const std::function<void(int timeout_ms)>& on_building,
                      const std::function<bool()>& cancelled) {
  if (!is_full_sha(commit))
    throw BuildError("commit: must be a full sha (40 hex digits), got \"" + commit + "\"");
  const std::string key = key_of(source, commit);
  std::lock_guard build(build_mutex_);
  {
    std::lock_guard lock(state_mutex_);
    if (auto f = failed_.find(key); f != failed_.end()) throw BuildError(f->second);
  }
  ensure_root();
  if (auto b = cached(key)) return *b;
  on_building(source.timeout_s * 1000);
  const fs::path work = fs::path(dir_) / "builds" / (key + ".tmp");
  remove_tree(work);
  const auto started = std::chrono::steady_clock::now();
  std::string why;
  try {
    why = build_into(source, commit, work.string(), job, cancelled);
  } catch (const std::exception& e) {  // the checkout or the start: another try may work
    remove_tree(work);
    throw BuildError(std::string("the build of ") + commit.substr(0, 12) + " could not start: " + e.what());
  }
  if (!why.empty()) fail(key, commit, why, work.string());
  return keep(source, commit, key, work.string(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

void BuildCache::fail(const std::string& key, const std::string& commit, const std::string& why,
                      const std::string& work) {
  const fs::path log = fs::path(dir_) / "failed" / (key + ".log");
  std::error_code ec;
  fs::copy_file(fs::path(work) / "build.log", log, fs::copy_options::overwrite_existing, ec);
  const std::string message = "the build of " + commit.substr(0, 12) + " failed: " + why +
                              " (log: " + log.string() + "); last lines:\n" + last_lines(log, kLogTailLines);
  remove_tree(work);
  if (why != kCancelled) {
    std::lock_guard lock(state_mutex_);
    failed_[key] = message;
  }
  throw BuildError(message);
}

Build BuildCache::keep(const TargetSource& source, const std::string& commit, const std::string& key,
                       const std::string& work, double seconds) {
  const fs::path folder = fs::path(dir_) / "builds" / key;
  Build b{(folder / "tree").string(), false, seconds, 0, key};
  seal_tree(fs::path(work) / "tree");
  b.bytes = tree_bytes(work);
  const nlohmann::json meta = {{"repository", source.repository},
                               {"commit", commit},
                               {"build", source.build},
                               {"seconds", b.seconds},
                               {"bytes", b.bytes}};
  std::ofstream(fs::path(work) / "meta.json") << meta.dump(2) << "\n";
  std::error_code ec;
  fs::rename(work, folder, ec);
  if (ec) throw BuildError("cannot keep the build in " + folder.string() + ": " + ec.message());
  evict(key);
  return b;
}

// Checks `commit` out into FOLDER/tree and runs the build there as a job, its output into
// FOLDER/build.log. "" when it built, else why not ("exited with 2", "ran past its limit"), which
// is remembered; EnvironmentError when the checkout or the start failed (another try may work).
std::string BuildCache::build_into(const TargetSource& source, const std::string& commit,
                                   const std::string& folder, const SpawnOptions& job,
                                   const std::function<bool()>& cancelled) {
  const fs::path tree = fs::path(folder) / "tree", home = fs::path(folder) / "home";
  for (auto& d : {fs::path(folder), tree, home}) {
    fs::create_directories(d);
    fs::permissions(d, fs::perms(0755));  // the job user reaches its tree, whatever the umask
  }
  {
    std::lock_guard lock(mirror_mutex_);
    std::string m = mirror_path(source);
    if (!run_git("", {"--git-dir=" + m, "cat-file", "-e", "--end-of-options", commit + "^{commit}"},
                 agent_git())
             .ok)
      m = mirror(source);  // a commit resolved elsewhere, or since
    auto checkout = run_git(tree, {"init", "--quiet"}, agent_git());
    if (checkout.ok)
      checkout = run_git(tree, {"fetch", "--quiet", "--depth", "1", "--", m, commit}, agent_git());
    if (checkout.ok)
      checkout = run_git(tree, {"checkout", "--quiet", "--detach", commit}, agent_git());  // 40 hex digits
    if (!checkout.ok)
      throw EnvironmentError("cannot check out " + commit + " of " + source.repository + ": " + checkout.out);
  }
  if (job.user) {
    chown_tree(tree, job.user->uid, job.user->gid);
    chown_tree(home, job.user->uid, job.user->gid);
  }
  SpawnOptions o = job;
  o.cwd = tree.string();
  o.output_log = (fs::path(folder) / "build.log").string();
  o.env.emplace_back("HOME", home.string());
  component_logger("agent")->info("building {} of {} in {}", commit.substr(0, 12), source.repository, folder);
  auto child = ChildProcess::spawn(source.build, o);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(source.timeout_s);
  std::optional<ExitStatus> st;
  while (!(st = child->wait_exit(200ms))) {
    if (cancelled()) {
      child->terminate(2s);
      return kCancelled;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      child->terminate(2s);
      child->wait_output_end(2s);
      return "it ran past its limit of " + std::to_string(source.timeout_s) +
             " s (source.timeout_s) and was stopped";
    }
  }
  const ExitStatus end = child->terminate(2s);  // reaps, and stops what it left running
  child->wait_output_end(2s);
  child.reset();
  remove_tree(home);
  if (end.code != 0) return end.describe();
  return "";
}

// Least recently used first, until the cache is within its cap; never `keep` or a pinned build.
void BuildCache::evict(const std::string& keep) {
  struct Entry {
    fs::path folder;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (auto& d : fs::directory_iterator(fs::path(dir_) / "builds", ec)) {
    if (!fs::exists(d.path() / "meta.json", ec)) continue;
    auto meta = nlohmann::json::parse(std::ifstream(d.path() / "meta.json"), nullptr, false);
    const uint64_t bytes = meta.is_object() ? meta.value("bytes", uint64_t{0}) : 0;
    entries.push_back({d.path(), fs::last_write_time(d.path() / "meta.json", ec), bytes});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.used < b.used; });
  for (auto& e : entries) {
    if (total <= static_cast<uint64_t>(max_bytes_)) break;
    const std::string key = e.folder.filename().string();
    {
      std::lock_guard lock(state_mutex_);
      if (key == keep || pins_.count(key)) continue;
    }
    component_logger("agent")->info("build cache over {} MiB: removing {}", max_bytes_ >> 20,
                                    e.folder.string());
    remove_tree(e.folder);
    total -= e.bytes;
  }
}

BuildCache::Pin::Pin(BuildCache& cache, std::string key) : cache_(cache), key_(std::move(key)) {
  std::lock_guard lock(cache_.state_mutex_);
  ++cache_.pins_[key_];
}

BuildCache::Pin::~Pin() {
  std::lock_guard lock(cache_.state_mutex_);
  if (--cache_.pins_[key_] == 0) cache_.pins_.erase(key_);
}

}  // namespace loadlab::agent
