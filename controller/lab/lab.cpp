#include "lab/lab.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "loadlab/shared/credential_files.hpp"
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

namespace {

// The content of the file the string at `key` names, relative to `dir`.
std::string named_file(const ObjectReader& o, const char* key, const std::string& dir) {
  const std::filesystem::path name = o.string(key);
  const auto path = name.is_absolute() ? name : std::filesystem::path(dir) / name;
  auto text = read_credential_file(path);
  if (!text)
    throw InputError(o.path(key), "cannot read the file " + path.string() + " (a regular file of at most " +
                                      std::to_string(limits::kMaxCredentialFileBytes) + " bytes)");
  return *text;
}

// "token_file" of the lab or of one agent, over `base`.
AgentCredentials with_token(const ObjectReader& o, const std::string& dir, AgentCredentials base) {
  if (o.has("token_file")) {
    auto token = token_of(named_file(o, "token_file", dir));
    if (!token)
      throw InputError(o.path("token_file"), "the file must hold one token: one line without spaces");
    if (token->size() < static_cast<size_t>(limits::kMinTokenBytes))
      throw InputError(o.path("token_file"), "the file holds a token of " + std::to_string(token->size()) +
                                                 " characters; at least " +
                                                 std::to_string(limits::kMinTokenBytes) +
                                                 " are needed (openssl rand -hex 32)");
    base.token = *token;
  }
  return base;
}

// "tls" and "token_file" of the lab or of one agent, over `base` (the lab's, for an agent).
AgentCredentials credentials(const ObjectReader& o, const std::string& dir, AgentCredentials base) {
  if (o.has("tls")) {
    auto t = o.object("tls");
    t.allow({"ca", "cert", "key", "server_name"});
    // An agent's tls naming only the name its certificate holds keeps the lab's files.
    const bool name_only = !t.has("ca") && !t.has("cert") && !t.has("key") && t.has("server_name");
    if (name_only && !base.ca_pem.empty()) {
      base.server_name = t.string("server_name");
      return with_token(o, dir, std::move(base));
    }
    base = AgentCredentials{named_file(t, "ca", dir), "", "", t.string("server_name", ""), base.token};
    if (t.has("cert") != t.has("key"))
      throw InputError(t.where(), "give both cert and key (the controller's client certificate), or neither");
    if (t.has("cert")) {
      base.cert_pem = named_file(t, "cert", dir);
      base.key_pem = named_file(t, "key", dir);
    }
  }
  return with_token(o, dir, std::move(base));
}

// With credentials kept apart (--lab-credentials), the lab file names agents, not secrets:
// `o` may hold a tls object with server_name only, and no token_file.
void refuse_credentials(const ObjectReader& o) {
  constexpr const char* kWhy =
      "comes from --lab-credentials only: a lab file kept with the scenarios (in a repository anyone "
      "with a commit can change) names agents, not credentials";
  if (o.has("token_file")) throw InputError(o.path("token_file"), kWhy);
  if (o.has("tls")) {
    auto t = o.object("tls");
    for (const char* key : {"ca", "cert", "key"})
      if (t.has(key)) throw InputError(t.path(key), kWhy);
  }
}

// The token goes to an agent other machines can reach only over TLS: a lab file may list
// any address, and a bearer token in clear text is anyone's who sees the traffic.
void refuse_token_in_clear(const AgentDef& d, const ObjectReader& a) {
  if (d.credentials.token.empty() || !d.credentials.ca_pem.empty() || is_loopback_address(d.address)) return;
  throw InputError(a.path("address"),
                   d.address +
                       " can be reached from the network, and its token would travel there in clear text: "
                       "give this agent (or the lab) tls with the ca of the agents' certificates");
}

}  // namespace

Lab parse_lab(const nlohmann::json& j, const std::string& dir, const nlohmann::json* kept_apart,
              const std::string& kept_apart_dir) {
  ObjectReader root(j, "");
  root.allow({"agents", "tls", "token_file"});
  AgentCredentials lab_credentials;
  if (kept_apart) {
    refuse_credentials(root);
    ObjectReader c(*kept_apart, "");
    c.allow({"tls", "token_file"});
    lab_credentials = credentials(c, kept_apart_dir, {});
    if (root.has("tls")) {
      root.object("tls").allow({"server_name"});
      lab_credentials.server_name = root.object("tls").string("server_name", lab_credentials.server_name);
    }
  } else {
    lab_credentials = credentials(root, dir, {});
  }
  Lab lab;
  std::set<std::string> names;
  for (auto& a : root.objects("agents")) {
    a.allow({"name", "address", "roles", "labels", "tls", "token_file"});
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
    if (kept_apart) {
      refuse_credentials(a);
      d.credentials = lab_credentials;
      if (a.has("tls")) {
        a.object("tls").allow({"server_name"});
        d.credentials.server_name = a.object("tls").string("server_name", d.credentials.server_name);
      }
    } else {
      d.credentials = credentials(a, dir, lab_credentials);
    }
    refuse_token_in_clear(d, a);
    lab.agents.push_back(std::move(d));
  }
  return lab;
}

Lab load_lab_file(const std::string& path, const std::string& credentials_path) {
  const auto dir = std::filesystem::path(path).parent_path().string();
  if (credentials_path.empty()) return parse_lab(read_json_file(path), dir);
  nlohmann::json kept_apart;
  try {
    kept_apart = read_json_file(credentials_path);
    // Parsed here for its own errors first: they name the credentials file.
    ObjectReader c(kept_apart, "");
    c.allow({"tls", "token_file"});
    credentials(c, std::filesystem::path(credentials_path).parent_path().string(), {});
  } catch (const InputError& e) {
    throw e.in_file(credentials_path);
  }
  return parse_lab(read_json_file(path), dir, &kept_apart,
                   std::filesystem::path(credentials_path).parent_path().string());
}

}  // namespace loadlab::controller
