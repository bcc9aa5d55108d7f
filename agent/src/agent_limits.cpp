#include "loadlab/agent/agent_limits.hpp"

#include <sstream>
#include <string>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::agent {

namespace {

template <class T, class L>
void at_most(const char* field, T value, L limit, const char* flag) {
  if (static_cast<double>(value) <= static_cast<double>(limit)) return;
  std::ostringstream m;
  m.precision(15);
  m << value << " is over this agent's limit of " << limit << " (loadlab-agent " << flag << ")";
  throw InputError(field, m.str());
}

}  // namespace

void check_limits(const v1::LoadSpec& s, const AgentLimits& l) {
  at_most("threads", s.threads(), l.threads, "--max-threads");
  at_most("connections", s.connections() ? s.connections() : s.threads(), l.connections, "--max-connections");
  if (s.stop_case() == v1::LoadSpec::kDurationS)
    at_most("duration_s", s.duration_s(), l.duration_s, "--max-duration-s");
  at_most("rate", s.rate(), l.rate, "--max-rate");
  at_most("body", s.body().size(), l.body_bytes, "--max-body-bytes");
}

void check_limits(const v1::TargetSpec& s, const AgentLimits& l) {
  at_most("threads", s.threads(), l.threads, "--max-threads");
  at_most("body", s.body().size(), l.body_bytes, "--max-body-bytes");
  if (s.has_body_size()) at_most("body_size", s.body_size(), l.body_bytes, "--max-body-bytes");
}

}  // namespace loadlab::agent
