#include "loadlab/shared/open_files.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace loadlab {

std::string raise_open_file_limit() {
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) return std::string("getrlimit: ") + std::strerror(errno);
  if (nofile.rlim_cur >= nofile.rlim_max) return "";
  const auto soft = nofile.rlim_cur;
  nofile.rlim_cur = nofile.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &nofile) == 0) return "";
  return "cannot raise the open-file limit to " + std::to_string(nofile.rlim_max) + ": " +
         std::strerror(errno) + "; it stays " + std::to_string(soft);
}

}  // namespace loadlab
