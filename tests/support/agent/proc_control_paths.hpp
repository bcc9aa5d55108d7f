#pragma once
// Runs a test once per process-control path: each case selects its path for the whole test
// process and restores the previous one afterwards; a path the machine lacks is skipped
// with the reason.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "loadlab/agent/proc_control.hpp"

namespace loadlab::agent {

// Selects `mode` for the whole test process while it lives; the previous path comes back
// when it is destroyed.
class PathSelection {
 public:
  explicit PathSelection(ProcControlMode mode)
      : wanted_(mode), previous_(proc_control().mode), chosen_(select_proc_control(mode)) {}
  ~PathSelection() { select_proc_control(previous_); }
  PathSelection(const PathSelection&) = delete;
  PathSelection& operator=(const PathSelection&) = delete;
  // "" when `mode` was selected, else why this machine cannot use it (the skip message).
  std::string unusable() const {
    return chosen_.mode == wanted_
               ? ""
               : std::string(to_string(wanted_)) + " is not usable here: " + chosen_.reason;
  }

 private:
  ProcControlMode wanted_, previous_;
  ProcControl chosen_;
};

class OnEachPath : public ::testing::TestWithParam<ProcControlMode> {
 protected:
  void SetUp() override {
    path_.emplace(GetParam());
    if (auto why = path_->unusable(); !why.empty()) GTEST_SKIP() << why;
  }
  void TearDown() override { path_.reset(); }
  bool on_cgroup() const { return GetParam() != ProcControlMode::kProcessGroup; }

 private:
  std::optional<PathSelection> path_;
};

inline std::string path_name(const ::testing::TestParamInfo<ProcControlMode>& info) {
  switch (info.param) {
    case ProcControlMode::kCgroup2:
      return "cgroup2";
    case ProcControlMode::kCgroup1Freezer:
      return "cgroup1";
    case ProcControlMode::kProcessGroup:
      return "pgroup";
  }
  return "unknown";
}

#define LOADLAB_ON_EACH_PATH(suite)                                                                       \
  INSTANTIATE_TEST_SUITE_P(Paths, suite,                                                                  \
                           ::testing::Values(ProcControlMode::kCgroup2, ProcControlMode::kCgroup1Freezer, \
                                             ProcControlMode::kProcessGroup),                             \
                           path_name)

// A suite whose tests hold only where jobs have cgroups: the two cgroup paths.
#define LOADLAB_ON_CGROUP_PATHS(suite)                                                                     \
  INSTANTIATE_TEST_SUITE_P(Paths, suite,                                                                   \
                           ::testing::Values(ProcControlMode::kCgroup2, ProcControlMode::kCgroup1Freezer), \
                           path_name)
// A suite of cgroup v2's own files (cgroup.kill, cpu.stat of a job's whole life).
#define LOADLAB_ON_CGROUP2(suite) \
  INSTANTIATE_TEST_SUITE_P(Paths, suite, ::testing::Values(ProcControlMode::kCgroup2), path_name)

// Field `n` (1-based, as proc(5) numbers them) of /proc/PID/stat; "" if the process is gone.
inline std::string stat_field(pid_t pid, int n) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return "";
  auto rparen = line.rfind(')');
  if (rparen == std::string::npos) return "";
  std::istringstream rest(line.substr(rparen + 2));
  std::string v;
  for (int i = 3; i <= n && rest >> v; ++i) {
  }
  return v;
}

}  // namespace loadlab::agent
