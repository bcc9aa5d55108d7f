#pragma once
// The lab: which agents exist, where, and what roles they take.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loadlab::controller {

// How the controller proves itself to an agent and checks the agent's certificate. Read from
// the files lab.json names (relative to its folder); secrets never come from the command
// line or the scenario, and are never written to a run folder.
struct AgentCredentials {
  std::string ca_pem;             // "" = no TLS; else the CA that signed the agent's certificate
  std::string cert_pem, key_pem;  // the controller's client certificate (mutual TLS), or ""
  std::string server_name;  // the name the agent's certificate is checked against; "" = the address's host
  std::string token;        // sent as authorization: Bearer TOKEN; "" = none
};

struct AgentDef {
  std::string name;
  std::string address;             // HOST:PORT or unix:PATH
  std::vector<std::string> roles;  // "target", "load"
  std::vector<std::pair<std::string, std::string>> labels;
  AgentCredentials credentials;
  bool has_role(const std::string& r) const;
  // Has the role and every one of the labels.
  bool matches(const std::string& role, const std::vector<std::pair<std::string, std::string>>& want) const;
};

struct Lab {
  std::vector<AgentDef> agents;
};

// InputError naming the JSON path. Files it names (TLS, token) are read relative to `dir`.
// With `kept_apart` (the JSON of --lab-credentials, its files relative to `kept_apart_dir`)
// the credentials are that file's, for every agent, and the lab may name none (a tls object
// of the lab or of an agent may still give server_name). Either way a token is refused for
// an agent other machines can reach unless it goes over TLS.
[[nodiscard]] Lab parse_lab(const nlohmann::json& j, const std::string& dir = ".",
                            const nlohmann::json* kept_apart = nullptr,
                            const std::string& kept_apart_dir = ".");
// The lab file; with `credentials_path`, its credentials come from that file (errors in it
// name it).
[[nodiscard]] Lab load_lab_file(const std::string& path, const std::string& credentials_path = "");

}  // namespace loadlab::controller
