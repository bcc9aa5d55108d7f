#include "loadlab/shared/build_info.hpp"

namespace loadlab {

std::string_view version() { return LOADLAB_VERSION; }

std::string version_line(std::string_view program) {
  std::string line(program);
  line += ' ';
  line += version();
  line += " (git ";
  line += git_commit();
  line += ')';
  return line;
}

}  // namespace loadlab
