#include "loadlab/controller/provenance.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace loadlab::controller
