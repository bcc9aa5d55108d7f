#pragma once
// The agent's check of a HostTarget request, apart from the service so that it can be
// exercised (tests, fuzzing) without gRPC.
#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

// Returns if the agent would host `spec`; else throws InputError naming the field and what
// is allowed.
void validate_target_spec(const v1::TargetSpec& spec);

}  // namespace loadlab::agent
