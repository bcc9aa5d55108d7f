// Secrets other users could read are named with what to do; header names that a client would
// send twice are found whatever their case.
#include "loadlab/shared/credential_files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "loadlab/shared/http_syntax.hpp"

namespace loadlab {
namespace {

using ::testing::HasSubstr;

TEST(SecretFiles, OnlyAFileThisUserAloneCanReadPasses) {
  const auto path = std::filesystem::temp_directory_path() / ("loadlab-secret-" + std::to_string(getpid()));
  std::ofstream(path) << "0123456789abcdef0123\n";
  chmod(path.c_str(), 0600);
  EXPECT_FALSE(readable_by_others(path));
  chmod(path.c_str(), 0400);
  EXPECT_FALSE(readable_by_others(path));
  chmod(path.c_str(), 0644);
  EXPECT_THAT(readable_by_others(path).value_or(""),
              HasSubstr("can be read by every user (mode 0644): chmod 600"));
  chmod(path.c_str(), 0604);
  EXPECT_TRUE(readable_by_others(path));
  // Its group: this user's own group passes (a Kubernetes secret, root:fsGroup 0440); another
  // group does not.
  chmod(path.c_str(), 0640);
  EXPECT_FALSE(readable_by_others(path));
  if (geteuid() == 0 && chown(path.c_str(), 0, 4242) == 0) {
    EXPECT_THAT(readable_by_others(path).value_or(""), HasSubstr("can be read by group 4242 (mode 0640)"));
    ASSERT_EQ(chown(path.c_str(), 4242, 0), 0);
    chmod(path.c_str(), 0600);
    EXPECT_THAT(readable_by_others(path).value_or(""), HasSubstr("is owned by uid 4242, not by this user"));
  }
  std::filesystem::remove(path);
}

TEST(HeaderNames, TwoNamesOfOneHeaderAreFoundIgnoringCase) {
  EXPECT_FALSE(same_header_names({"Host", "Accept", "X-A"}));
  auto same = same_header_names({"x", "Host", "hOST"});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->first, "Host");  // sorted: one message whatever the map's order
  EXPECT_EQ(same->second, "hOST");
}

}  // namespace
}  // namespace loadlab
