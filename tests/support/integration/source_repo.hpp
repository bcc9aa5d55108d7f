#pragma once
// A git repository a test makes of its own for targets built from a commit: the small C server
// of tests/data/commit_server, committed as the test says (tests/process/integration/
// built_target_test.cpp, tests/timing/integration/bisect_test.cpp), and a catalog that builds it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

// Named, not anonymous: one class in every file that uses it.
namespace loadlab::source_repo {

namespace fs = std::filesystem;

// git in `dir`, as the test's own user; its stdout.
inline std::string git(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/git", "-C", dir.string(), "-c", "user.name=loadlab test", "-c",
                             "user.email=test@loadlab.invalid", "-c", "commit.gpgsign=false"});
  auto r = testing::run_command(args, std::chrono::seconds(60));
  EXPECT_EQ(r.code, 0) << r.output_tail;
  while (!r.stdout_text.empty() && r.stdout_text.back() == '\n') r.stdout_text.pop_back();
  return r.stdout_text;
}

inline void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

// The repository, on branch main, its first commit the server as tests/data has it.
struct SourceRepo {
  explicit SourceRepo(const fs::path& at) : dir(at) {
    fs::create_directories(dir);
    for (const char* f : {"server.c", "work.h", "Makefile"})
      fs::copy_file(std::string(LOADLAB_SOURCE_DIR) + "/tests/data/commit_server/" + f, dir / f);
    git(dir, {"init", "--quiet", "--initial-branch", "main"});
  }
  // Commits the work tree as it is, tagged `tag`.
  void commit(const std::string& tag, const std::string& subject) {
    git(dir, {"add", "--all"});
    git(dir, {"commit", "--quiet", "--allow-empty", "-m", subject});
    git(dir, {"tag", tag});
    shas[tag] = git(dir, {"rev-parse", "HEAD"});
  }
  void set_work(int iterations) {
    write(dir / "work.h", "#define WORK_ITERATIONS " + std::to_string(iterations) + "\n");
  }
  void break_build() {
    std::ofstream(dir / "server.c", std::ios::app) << "#error this commit does not compile\n";
  }
  void mend_build(const std::string& tag) { git(dir, {"checkout", "--quiet", tag, "--", "server.c"}); }
  fs::path dir;
  std::map<std::string, std::string> shas;
};

// The catalog: "cs" built by make within 120 s, "cs-quick" the same within 2 s.
inline std::string catalog(const testing::TempDir& dir, const SourceRepo& repo) {
  auto entry = [&](int timeout_s) {
    return nlohmann::json{
        {"source", {{"repository", repo.dir.string()}, {"build", {"make"}}, {"timeout_s", timeout_s}}},
        {"argv", {"{build_dir}/server", "{port}", "{host}"}}};
  };
  return dir.file("catalog.json",
                  nlohmann::json{{"targets", {{"cs", entry(120)}, {"cs-quick", entry(2)}}}}.dump());
}

// A lab of one agent "srv" at `address`, hosting targets and load.
inline std::string one_agent_lab(const testing::TempDir& dir, const std::string& address) {
  return dir.file("lab.json", R"({"agents": [{"name": "srv", "address": ")" + address +
                                  R"(", "roles": ["target", "load"]}]})");
}

}  // namespace loadlab::source_repo
