#include "loadlab/controller/lab.hpp"

#include <algorithm>
#include <set>

#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/json_input.hpp"

namespace loadlab::controller {

bool AgentDef::has_role(const std::string& r) const {
  return std::find(roles.begin(), roles.end(), r) != roles.end();
}

bool AgentDef::matches(const std::string& role,
                       const std::vector<std::pair<std::string, std::string>>& want) const {
  if (!has_role(role)) return false;
  for (auto& w : want)
    if (std::find(labels.begin(), labels.end(), w) == labels.end()) return false;
  return true;
}

Lab parse_lab(const nlohmann::json& j) {
  ObjectReader root(j, "");
  root.allow({"agents"});
  Lab lab;
  std::set<std::string> names;
  for (auto& a : root.objects("agents")) {
    a.allow({"name", "address", "roles", "labels"});
    AgentDef d;
    d.name = a.string("name");
    if (d.name.empty()) throw InputError(a.path("name"), "must not be empty");
    if (!names.insert(d.name).second)
      throw InputError(a.path("name"), "duplicate agent name \"" + d.name + "\"");
    d.address = a.string("address");
    if (!parse_endpoint(d.address) && d.address.rfind("unix:", 0) != 0)
      throw InputError(a.path("address"), "must be HOST:PORT or unix:PATH");
    if (!a.has("roles") || !a.at("roles").is_array() || a.at("roles").empty())
      throw InputError(a.path("roles"), "must be a non-empty array of \"target\" and/or \"load\"");
    for (size_t i = 0; i < a.at("roles").size(); ++i) {
      const auto& r = a.at("roles")[i];
      if (!r.is_string() || (r != "target" && r != "load"))
        throw InputError(a.path("roles") + "/" + std::to_string(i), "must be \"target\" or \"load\"");
      d.roles.push_back(r.get<std::string>());
    }
    d.labels = a.string_map("labels");
    lab.agents.push_back(std::move(d));
  }
  return lab;
}

Lab load_lab_file(const std::string& path) { return parse_lab(read_json_file(path)); }

}  // namespace loadlab::controller
