// The port lock folder is shared by the agents of a machine: one that another user made, or
// a link in its place, could be used to point the agent's lock files at files of its own.
#include "loadlab/agent/ports.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

// A root agent's lock files (0644) fill the folder over time; a non-root agent on the same
// machine still reserves a port: it locks their files read-only, and each attempt is another port.
TEST(PortLocks, AnotherUsersLockFilesDoNotKeepTheirPortsFromANonRootAgent) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to make files of root's and switch to nobody";
  const fs::path dir = fs::temp_directory_path() / ("loadlab-ports-root-" + std::to_string(getpid()));
  fs::create_directories(dir);
  chmod(dir.c_str(), 01777);
  int low = 32768, high = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low >> high;
  for (int port = low; port <= high; ++port)
    std::ofstream(dir / std::to_string(port)) << "1\n";  // root's, 0644
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    _exit(error_of(dir.string()).empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  fs::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "nobody could not reserve a port among root's lock files";
}

}  // namespace
}  // namespace loadlab::agent
