#include "loadlab/clients/tool.hpp"

namespace loadlab::clients {

std::string_view tool_name(Tool tool) {
  switch (tool) {
    case Tool::kWrk:
      return "wrk";
    case Tool::kHey:
      return "hey";
    case Tool::kH2load:
      return "h2load";
  }
  return "?";
}

std::optional<Tool> parse_tool(std::string_view name) {
  for (Tool t : {Tool::kWrk, Tool::kHey, Tool::kH2load})
    if (name == tool_name(t)) return t;
  return std::nullopt;
}

std::string tool_names() { return "wrk, hey, h2load"; }

}  // namespace loadlab::clients
