#pragma once
// What a binary says of itself for --version: the project's version and the git commit it
// was built from.
#include <string>
#include <string_view>

namespace loadlab {

// The project version of the top CMakeLists.txt, e.g. "0.1.0".
std::string_view version();

// The commit the build saw: 12 hex digits, "-dirty" appended when tracked files had
// changes, or "unknown" when built outside a git checkout. Defined in a file generated at
// build time (cmake/git_commit.cmake), so a new commit rebuilds that file alone.
std::string_view git_commit();

// "PROGRAM VERSION (git COMMIT)", the answer to every binary's --version.
std::string version_line(std::string_view program);

}  // namespace loadlab
