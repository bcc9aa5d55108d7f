#pragma once
// Every connection is a descriptor: the soft RLIMIT_NOFILE (often 1024) would cap -c long
// before the hard limit does.
#include <cstdint>

namespace loadlab::load {

// Raises the soft open-files limit to the hard limit; returns the soft limit now in force
// (-1 if it cannot be read). Process-wide; call before starting threads.
int64_t raise_open_files_limit();

}  // namespace loadlab::load
