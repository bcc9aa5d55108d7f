#pragma once
// The lab: which agents exist, where, and what roles they take.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadlab::controller {

struct AgentDef {
  std::string name;
  std::string address;  // HOST:PORT or unix:PATH
  std::vector<std::string> roles;  // "target", "load"
  bool has_role(const std::string& r) const;
};

struct Lab {
  std::vector<AgentDef> agents;
  // The first agent with the role; InputError if none.
  const AgentDef& first_with_role(const std::string& role) const;
};

Lab parse_lab(const nlohmann::json& j);  // InputError naming the JSON path
Lab load_lab_file(const std::string& path);

}  // namespace loadlab::controller
