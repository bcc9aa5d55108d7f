#include "loadlab/agent/target_spec_check.hpp"

#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::agent {

void validate_target_spec(const v1::TargetSpec& spec) {
  if (spec.kind_case() == v1::TargetSpec::KIND_NOT_SET)
    throw InputError("kind", "one of builtin or catalog is required");
  if (spec.delay_ms() > static_cast<uint32_t>(limits::kMaxDelayMs))
    throw InputError("delay_ms", "must be 0.." + std::to_string(limits::kMaxDelayMs) + ", got " +
                                     std::to_string(spec.delay_ms()));
  if (spec.threads() > static_cast<uint32_t>(limits::kMaxServerThreads))
    throw InputError("threads", "must be 0.." + std::to_string(limits::kMaxServerThreads) +
                                    " (0 = the agent's cores), got " + std::to_string(spec.threads()));
  if (spec.body().size() > static_cast<size_t>(limits::kMaxBodyBytes))
    throw InputError("body", "must be at most " + std::to_string(limits::kMaxBodyBytes) + " bytes");
  if (spec.has_body_size() && spec.body_size() > static_cast<uint64_t>(limits::kMaxResponseBodyBytes))
    throw InputError("body_size", "must be 0.." + std::to_string(limits::kMaxResponseBodyBytes) + ", got " +
                                      std::to_string(spec.body_size()));
  if (spec.start_timeout_ms() != 0 &&
      (spec.start_timeout_ms() < static_cast<uint32_t>(limits::kMinStartTimeoutMs) ||
       spec.start_timeout_ms() > static_cast<uint32_t>(limits::kMaxStartTimeoutMs)))
    throw InputError("start_timeout_ms", "must be 0 (the catalog's) or " +
                                             std::to_string(limits::kMinStartTimeoutMs) + ".." +
                                             std::to_string(limits::kMaxStartTimeoutMs) + ", got " +
                                             std::to_string(spec.start_timeout_ms()));
  if (spec.has_body_size() && !spec.body().empty())
    throw InputError("body_size", "give at most one of body and body_size");
  const auto& c = spec.commit();
  if (!c.empty() && (c.size() != 40 || c.find_first_not_of("0123456789abcdef") != std::string::npos))
    throw InputError(
        "commit", "must be a full sha (40 lower-case hex digits) or empty, got \"" + c.substr(0, 64) + "\"");
  if (!v1::InstructionsMethod_IsValid(spec.instructions()))
    throw InputError("instructions",
                     "must be INSTRUCTIONS_NONE, INSTRUCTIONS_CALLGRIND or INSTRUCTIONS_COUNTERS, got " +
                         std::to_string(spec.instructions()));
}

}  // namespace loadlab::agent
