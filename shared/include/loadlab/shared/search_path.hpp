#pragma once
// A program found as execvp would find it, for the agent to run by its full path: the first
// executable `program` in a folder of $PATH (/usr/bin:/bin when unset). Relative folders of
// $PATH are passed over: what the agent runs must not depend on its working directory.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace loadlab {

// The full path, or "" when no folder of $PATH holds an executable `program`.
inline std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  const std::string list = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= list.size();) {
    const size_t end = std::min(list.find(':', start), list.size());
    const std::string folder = list.substr(start, end - start);
    start = end + 1;
    if (folder.empty() || folder[0] != '/') continue;
    const std::string candidate = folder + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace loadlab
