// The port lock folder is shared by the agents of a machine: one that another user made, or
// a link in its place, could be used to point the agent's lock files at files of its own.
#include "loadlab/agent/ports.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace loadlab::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string error_of(const std::string& lock_dir) {
  try {
    PortReservation r("127.0.0.1", lock_dir);
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

TEST(PortLocks, AFolderAnotherUserMadeIsRefused) {
  const fs::path base = fs::temp_directory_path() / ("loadlab-ports-test-" + std::to_string(getpid()));
  fs::create_directories(base);
  // Made here: world-writable with the sticky bit, whatever the umask.
  EXPECT_EQ(error_of((base / "fresh").string()), "");
  struct stat st {};
  ASSERT_EQ(stat((base / "fresh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  // A link in the folder's place.
  fs::create_directories(base / "elsewhere");
  fs::create_directory_symlink(base / "elsewhere", base / "link");
  EXPECT_THAT(error_of((base / "link").string()), HasSubstr("is not a folder (a link?)"));
  // World-writable without the sticky bit: anyone could replace our lock files.
  fs::create_directories(base / "open");
  chmod((base / "open").c_str(), 0777);
  EXPECT_THAT(error_of((base / "open").string()), HasSubstr("has no sticky bit"));
  if (geteuid() == 0) {
    fs::create_directories(base / "theirs");
    ASSERT_EQ(chown((base / "theirs").c_str(), 4242, 4242), 0);
    EXPECT_THAT(error_of((base / "theirs").string()), HasSubstr("belongs to uid 4242, not to this user"));
  }
  fs::remove_all(base);
}

}  // namespace
}  // namespace loadlab::agent
