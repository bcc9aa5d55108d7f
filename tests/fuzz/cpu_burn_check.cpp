// Replaces programs/target_server/cpu_burn.cpp's burn_cpu in the h2 fuzz target (an object on the link line
// wins over the archive member, which is then not pulled in; a second symbol in cpu_burn.cpp would
// make the link fail loudly). A knob may ask 50 ms of CPU per request and a thousand streams may
// ask at once: burnt for real, an input would be a timeout about a rule the unit tests cover
// (TargetH2Floods). What is checked instead: the server's default is 0, so every ask is a knob's
// and must be within its limit.
#include <chrono>
#include <cstdlib>

#include "cpu_burn.hpp"
#include "knobs.hpp"

namespace loadlab::target {

void burn_cpu(std::chrono::microseconds work) {
  if (work.count() < 0 || static_cast<std::uint64_t>(work.count()) > kMaxRequestWorkUs) std::abort();
}

}  // namespace loadlab::target
