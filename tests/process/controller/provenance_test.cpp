#include "run/provenance.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bare_lookalike_repo.hpp"

namespace loadlab::controller {
namespace {

TEST(Provenance, HashesTheFileAndFindsNoGitOutsideARepository) {
  char tmpl[] = "/tmp/loadlab-prov-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string file = dir + "/s.json";
  { std::ofstream(file) << "abc"; }
  auto j = file_provenance(file);
  EXPECT_EQ(j["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(j["git"].is_null());
  std::filesystem::remove_all(dir);
}

TEST(Provenance, NamesTheCommitAndWhetherTheFileOrTreeIsDirty) {
  char tmpl[] = "/tmp/loadlab-git-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string file = dir + "/s.json", other = dir + "/other.txt";
  { std::ofstream(file) << "{}"; }
  { std::ofstream(other) << "x"; }
  std::string git = "git -C " + dir + " -c user.name=t -c user.email=t@example.invalid ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git + "commit -qm init").c_str()), 0);
  auto clean = file_provenance(file);
  ASSERT_TRUE(clean["git"].is_object());
  EXPECT_EQ(clean["git"]["commit"].get<std::string>().size(), 40u);
  EXPECT_FALSE(clean["git"]["dirty"].get<bool>());
  EXPECT_FALSE(clean["git"]["tree_dirty"].get<bool>());
  { std::ofstream(other) << "changed"; }
  auto tree = file_provenance(file);
  EXPECT_FALSE(tree["git"]["dirty"].get<bool>());
  EXPECT_TRUE(tree["git"]["tree_dirty"].get<bool>());
  { std::ofstream(file) << "{\"changed\": 1}"; }
  EXPECT_TRUE(file_provenance(file)["git"]["dirty"].get<bool>());
  std::filesystem::remove_all(dir);
}

// A committed folder laid out as a bare repository, with a config whose core.fsmonitor runs a
// command: the provenance of a scenario in it, or of one it includes from beside it, comes
// from the repository around it (its commit), and the command never runs.
TEST(Provenance, AFolderThatLooksLikeABareRepositoryIsNotAskedAndRunsNothing) {
  char tmpl[] = "/tmp/loadlab-git-XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  const auto marker = dir / "MARKER";
  const auto outer = dir / "outer", clone = dir / "clone";
  std::filesystem::create_directories(outer / "evil");
  { std::ofstream(outer / "evil" / "s.json") << "{}"; }
  { std::ofstream(outer / "evil" / "part.json") << "{}"; }
  { std::ofstream(outer / "top.json") << "{}"; }
  const std::string commit = testing::commit_bare_lookalike(outer, "evil", marker);
  ASSERT_EQ(commit.size(), 40u);
  ASSERT_EQ(std::system(("git clone -q '" + outer.string() + "' '" + clone.string() + "'").c_str()), 0);

  auto in_evil = file_provenance((clone / "evil" / "s.json").string());
  ASSERT_TRUE(in_evil["git"].is_object()) << in_evil.dump();
  EXPECT_EQ(in_evil["git"]["commit"], commit);
  EXPECT_EQ(in_evil["git"]["dirty"], false);
  EXPECT_EQ(in_evil["git"]["tree_dirty"], false);
  const ScenarioRepository repository((clone / "top.json").string());
  EXPECT_EQ(repository.work_tree(), std::filesystem::canonical(clone));
  auto included = repository.provenance((clone / "evil" / "part.json").string());
  EXPECT_EQ(included["git"]["commit"], commit) << included.dump();
  EXPECT_EQ(included["git"]["dirty"], false);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the folder's core.fsmonitor ran";
  std::filesystem::remove_all(dir);
}

// Only the scenario's repository is asked: a file outside its work tree has no git state, and
// one git ignores is not what the commit holds.
TEST(Provenance, AFileOutsideTheWorkTreeHasNoGitStateAndAnIgnoredOneIsDirty) {
  char tmpl[] = "/tmp/loadlab-git-XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  std::filesystem::create_directories(dir / "repo");
  { std::ofstream(dir / "repo" / "s.json") << "{}"; }
  { std::ofstream(dir / "repo" / ".gitignore") << "local.json\n"; }
  { std::ofstream(dir / "repo" / "local.json") << "{}"; }
  { std::ofstream(dir / "outside.json") << "{}"; }
  std::string git = "git -C " + (dir / "repo").string() + " -c user.name=t -c user.email=t@example.invalid ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git + "commit -qm init").c_str()), 0);
  const ScenarioRepository repository((dir / "repo" / "s.json").string());
  EXPECT_EQ(repository.provenance((dir / "repo" / "s.json").string())["git"]["dirty"], false);
  EXPECT_TRUE(repository.provenance((dir / "outside.json").string())["git"].is_null());
  EXPECT_EQ(repository.provenance((dir / "repo" / "local.json").string())["git"]["dirty"], true);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loadlab::controller
