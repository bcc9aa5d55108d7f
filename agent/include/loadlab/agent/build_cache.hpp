#pragma once
// The builds of targets built from a commit (a catalog entry's "source"), cached on the agent's
// machine by (repository, commit, build command), and the mirror of each source repository
// that commits are resolved and checked out from.
//
//   DIR/repos/HASH.git    a bare mirror of one repository (its branches and tags)
//   DIR/builds/KEY/       one build: tree/ (the checkout, built: {build_dir}), build.log,
//                         meta.json (repository, commit, command, seconds, bytes)
//   DIR/failed/KEY.log    the log of the last failed build of KEY
//
// A build is a job (the job user, no capabilities, no inherited descriptors, its cgroup and
// limits) in a clean checkout, within its time limit. Once built, the tree is sealed: owned
// by the agent's user, no write permission for anyone and no set-id bit, so that neither a
// target started from it nor a later build can change what a later run trusts. The cache
// holds at most `max_bytes`: after each build the least recently used builds go first (never
// one a target runs from). A failed build is remembered (with its log's tail) for the agent's
// life, so the cells that need it fail at once instead of building it again.
//
// git runs as the agent, hardened (loadlab/shared/git_command.hpp), with `--end-of-options`
// before every ref. Thread-safe: one build at a time, resolves beside it.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "loadlab/agent/catalog.hpp"
#include "loadlab/agent/child_process.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

// Why a build could not be had: the message (with the log's tail) for the cells that needed it.
struct BuildError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Build {
  std::string dir;  // the built tree: {build_dir}
  bool cached = false;
  double seconds = 0;  // the build's own time, when it was made
  uint64_t bytes = 0;
  std::string key;
};

class BuildCache {
 public:
  // `dir`: the cache's folder, made (0755) at first use; it must be the agent's own and not
  // writable by others. `max_bytes`: its size cap.
  BuildCache(std::string dir, int64_t max_bytes);

  // The commit `ref` names in `source`'s repository, fetched into its mirror first; with
  // `since`, also the first-parent chain between them (ResolveCommit). Throws InputError
  // ("ref") for a ref that is malformed or names no commit, EnvironmentError when the
  // repository cannot be fetched.
  v1::ResolvedCommit resolve(const TargetSource& source, const std::string& ref, const std::string& since);

  // The build of `commit` (40 hex digits), made first when the cache lacks it: `on_building`
  // is called before a build starts, with its time limit; `cancelled` is polled while it
  // runs. `job` holds the job's user, CPUs and task limit. Throws BuildError.
  Build get(const TargetSource& source, const std::string& commit, const SpawnOptions& job,
            const std::function<void(int timeout_ms)>& on_building, const std::function<bool()>& cancelled);

  // While a Pin lives its build is not evicted (a target runs from it).
  class Pin {
   public:
    Pin(BuildCache& cache, std::string key);
    ~Pin();
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

   private:
    BuildCache& cache_;
    std::string key_;
  };

  const std::string& dir() const { return dir_; }
  // The cache key of a build: a hash of repository, commit and command.
  static std::string key_of(const TargetSource& source, const std::string& commit);

 private:
  std::string mirror_path(const TargetSource& source) const;
  std::string mirror(const TargetSource& source);  // fetched now; mirror_mutex_ held
  void ensure_root();
  std::string build_into(const TargetSource& source, const std::string& commit, const std::string& folder,
                         const SpawnOptions& job, const std::function<bool()>& cancelled);
  std::optional<Build> cached(const std::string& key);  // touched as used
  // Records a failed build (but a cancelled one) with its log's tail, and throws it.
  [[noreturn]] void fail(const std::string& key, const std::string& commit, const std::string& why,
                         const std::string& work);
  // Seals the build made in `work`, keeps it as `key`, and evicts what the cap wants out.
  Build keep(const TargetSource& source, const std::string& commit, const std::string& key,
             const std::string& work, double seconds);
  void evict(const std::string& keep);

  std::string dir_;
  int64_t max_bytes_;
  std::mutex mirror_mutex_;  // git in the mirrors
  std::mutex build_mutex_;   // one build at a time
  std::mutex state_mutex_;   // failed_, pins_
  std::map<std::string, std::string> failed_;
  std::map<std::string, int> pins_;
};

// A folder fit for the build cache: the agent's own (its uid), not writable by group or others.
// "" when it is, else why not.
std::string unfit_cache_folder(const std::string& dir);

}  // namespace loadlab::agent
