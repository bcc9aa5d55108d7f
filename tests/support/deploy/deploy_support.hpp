#pragma once
// Helpers of the deploy tests: the build tree installed into a temporary prefix, and the
// commit the binaries should name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_support.hpp"

namespace loadlab::testing {

// `cmake --install` of the build tree into a fresh temporary prefix, removed at the end.
class InstalledTree {
 public:
  InstalledTree() {
    auto out = run_command({LOADLAB_CMAKE, "--install", LOADLAB_BUILD_DIR, "--prefix", prefix()});
    EXPECT_EQ(out.code, 0) << out.output_tail;
  }
  std::string prefix() const { return dir_.path().string(); }
  std::string path(const std::string& relative) const { return prefix() + "/" + relative; }

 private:
  TempDir dir_;
};

// Whether the kernel knows the file system `name` (/proc/filesystems).
inline bool filesystem_supported(const std::string& name) {
  std::ifstream in("/proc/filesystems");
  for (std::string line; std::getline(in, line);)
    if (line.size() > name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0 &&
        (line[line.size() - name.size() - 1] == '\t' || line[line.size() - name.size() - 1] == ' '))
      return true;
  return false;
}

// What cmake/git_commit.cmake writes for the source tree as it is now: the binaries under
// test were built from it (a tree changed since the build needs a rebuild first).
inline std::string expected_commit() {
  std::string git = LOADLAB_GIT;
  if (git.empty()) return "unknown";
  auto head = run_command({git, "-C", LOADLAB_SOURCE_DIR, "rev-parse", "--short=12", "HEAD"});
  if (head.code != 0 || head.stdout_text.size() < 2) return "unknown";
  std::string commit = head.stdout_text.substr(0, head.stdout_text.size() - 1);
  auto status = run_command({git, "-C", LOADLAB_SOURCE_DIR, "status", "--porcelain", "--untracked-files=no"});
  if (status.code == 0 && !status.stdout_text.empty()) commit += "-dirty";
  return commit;
}

}  // namespace loadlab::testing
