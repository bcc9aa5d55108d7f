#pragma once
// The external load generators the agent can run in place of loadlab-load.
#include <optional>
#include <string>
#include <string_view>

namespace loadlab::clients {

enum class Tool { kWrk, kHey, kH2load };

// "wrk", "hey", "h2load".
std::string_view tool_name(Tool tool);

// The tool for one of those names (exact, lower case); nullopt for any other text.
[[nodiscard]] std::optional<Tool> parse_tool(std::string_view name);

// The names, comma separated, for messages ("wrk, hey, h2load").
std::string tool_names();

}  // namespace loadlab::clients
