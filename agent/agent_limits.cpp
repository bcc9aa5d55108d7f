#include "loadlab/agent/agent_limits.hpp"

#include <sstream>
#include <string>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::agent {

namespace {

// Throws when `value` (written `text`) is over `limit`, naming the field and the flag.
template <class L>
void at_most(const char* field, const std::string& text, double value, L limit, const char* flag) {
  if (value <= static_cast<double>(limit)) return;
  std::ostringstream m;
  m.precision(15);
  m << text << " is over this agent's limit of " << limit << " (loadlab-agent " << flag << ")";
  throw InputError(field, m.str());
}

template <class T, class L>
void at_most(const char* field, T value, L limit, const char* flag) {
  std::ostringstream m;
  m.precision(15);
  m << value;
  at_most(field, m.str(), static_cast<double>(value), limit, flag);
}

// --max-duration-s caps a load's whole run: its warm-up and its measured duration together
// (a count of requests has no duration to add: its warm-up alone must fit, and the agent ends
// it at the limit, agent_service.cpp).
void check_run_time(const v1::LoadSpec& s, const AgentLimits& l) {
  if (s.stop_case() != v1::LoadSpec::kDurationS)
    return at_most("warmup_s", s.warmup_s(), l.duration_s, "--max-duration-s: a load's whole run");
  if (s.warmup_s() == 0) return at_most("duration_s", s.duration_s(), l.duration_s, "--max-duration-s");
  std::ostringstream m;
  m.precision(15);
  m << s.warmup_s() << " + " << s.duration_s() << " = " << s.warmup_s() + s.duration_s();
  at_most("warmup_s + duration_s", m.str(), s.warmup_s() + s.duration_s(), l.duration_s,
          "--max-duration-s: a load's whole run, warm-up included");
}

}  // namespace

void check_limits(const v1::LoadSpec& s, const AgentLimits& l) {
  at_most("threads", s.threads(), l.threads, "--max-threads");
  at_most("connections", s.connections() ? s.connections() : s.threads(), l.connections, "--max-connections");
  check_run_time(s, l);
  at_most("rate", s.rate(), l.rate, "--max-rate");
  at_most("body", s.body().size(), l.body_bytes, "--max-body-bytes");
}

void check_limits(const v1::TargetSpec& s, const AgentLimits& l) {
  at_most("threads", s.threads(), l.threads, "--max-threads");
  at_most("body", s.body().size(), l.body_bytes, "--max-body-bytes");
  if (s.has_body_size()) at_most("body_size", s.body_size(), l.body_bytes, "--max-body-bytes");
}

}  // namespace loadlab::agent
