#pragma once
// Conversions between loadlab-load's JSON lines and the protocol's messages.
#include <string>

#include <nlohmann/json.hpp>

#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

// Fills `out` from a result object of loadlab-load (--json / the "result" event).
// Returns "" on success, else what is wrong.
std::string load_result_from_json(const nlohmann::json& j, v1::LoadResult* out);

// The loadlab-load command line for a spec (validated before).
std::vector<std::string> load_command_line(const std::string& binary, const v1::LoadSpec& spec);

// "" if the spec is valid, else a message naming the field and what is allowed.
std::string validate_load_spec(const v1::LoadSpec& spec);

}  // namespace loadlab::agent
