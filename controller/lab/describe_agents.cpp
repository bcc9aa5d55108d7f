#include "lab/describe_agents.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "lab/agent_pool.hpp"
#include "lab/lab.hpp"
#include "loadlab/shared/exit_status.hpp"

namespace loadlab::controller {

namespace {

using Row = std::vector<std::string>;

Row agent_row(const ConnectedAgent& a) {
  const AgentDef& def = a.def;
  std::string roles;
  for (auto& r : def.roles) roles += (roles.empty() ? "" : ",") + r;
  if (!a.reachable())
    return {def.name, def.address, roles, "-", "-", "-", "-", "-", "-", "UNREACHABLE: " + a.error};
  // Each name with the protocols it serves or speaks: "hello (http1, https)".
  auto with_protocols = [](const std::string& name, const std::vector<std::string>& protocols) {
    std::string list;
    for (auto& p : protocols) list += (list.empty() ? "" : ", ") + p;
    return name + " (" + list + ")";
  };
  std::string catalog;
  for (auto& c : a.info.catalog())
    catalog += (catalog.empty() ? "" : ", ") + with_protocols(c, a.target_protocols(c));
  std::string clients;
  for (auto& c : a.info.clients())
    clients += (clients.empty() ? "" : ", ") + with_protocols(c, a.client_protocols(c));
  if (!clients.empty()) catalog += "; clients: " + clients;
  const auto& profiling = a.info.profiling();
  const std::string can_profile = !a.info.has_profiling()  ? "-"  // an agent older than profiles
                                  : !profiling.available() ? "no"
                                  : profiling.kernel()     ? "yes"
                                                           : "user";
  if (can_profile == "no") catalog += "; no profiling: " + profiling.reason();
  const std::string memory =
      fmt::format("{:.1f} GiB", static_cast<double>(a.info.memory_bytes()) / (1024.0 * 1024 * 1024));
  return {def.name,
          def.address,
          roles,
          a.info.version() + (a.info.commit().empty() ? "" : " (git " + a.info.commit() + ")"),
          a.info.hostname(),
          std::to_string(a.info.cores()),
          memory,
          a.info.busy() ? "yes" : "no",
          can_profile,
          catalog};
}

// Columns padded to their widest cell, the last one free.
void write_columns(std::ostream& out, const std::vector<Row>& rows) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (auto& r : rows)
    for (size_t i = 0; i + 1 < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << r[i];
      if (i + 1 < r.size()) out << std::string(width[i] - r[i].size() + 2, ' ');
    }
    out << "\n";
  }
}

}  // namespace

int describe_agents(const std::string& lab_path, const std::string& credentials_path, std::ostream& out) {
  Lab lab = load_lab_file(lab_path, credentials_path);
  std::vector<Row> rows{{"agent", "address", "roles", "version", "host", "cores", "memory", "busy",
                         "profiling", "targets; clients / error"}};
  bool all = true;
  AgentPool pool;
  for (auto& def : lab.agents) {
    const ConnectedAgent& a = pool.add(def, 5);
    all = all && a.reachable();
    rows.push_back(agent_row(a));
  }
  write_columns(out, rows);
  return all ? exit_status::kOk : exit_status::kLabUnusable;
}

}  // namespace loadlab::controller
