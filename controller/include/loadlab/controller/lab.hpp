#pragma once
// The lab: which agents exist, where, and what roles they take.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loadlab::controller {

struct AgentDef {
  std::string name;
  std::string address;             // HOST:PORT or unix:PATH
  std::vector<std::string> roles;  // "target", "load"
  std::vector<std::pair<std::string, std::string>> labels;
  bool has_role(const std::string& r) const;
  // Has the role and every one of the labels.
  bool matches(const std::string& role, const std::vector<std::pair<std::string, std::string>>& want) const;
};

struct Lab {
  std::vector<AgentDef> agents;
};

Lab parse_lab(const nlohmann::json& j);  // InputError naming the JSON path
Lab load_lab_file(const std::string& path);

}  // namespace loadlab::controller
