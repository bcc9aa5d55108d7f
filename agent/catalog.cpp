#include "loadlab/agent/catalog.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <regex>

#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/search_path.hpp"

namespace loadlab::agent {

namespace {

constexpr const char* kPlaceholders[] = {"{port}",    "{host}",        "{delay_ms}",
                                         "{threads}", "{protocol}",    "{tls_cert}",
                                         "{tls_key}", "{catalog_dir}", "{build_dir}"};
constexpr const char* kCatalogDir = "{catalog_dir}";
constexpr const char* kBuildDir = "{build_dir}";

// Every {word} in `text` must be a known placeholder; {catalog_dir} needs a catalog file.
// Returns `text` with {catalog_dir} replaced: it is known when the file is read, the others
// only when a target starts.
std::string check_placeholders(const std::string& text, const std::string& path, const std::string& dir) {
  static const std::regex brace(R"(\{[A-Za-z_]*\})");
  for (std::sregex_iterator it(text.begin(), text.end(), brace), end; it != end; ++it) {
    bool known = false;
    for (auto* p : kPlaceholders) known = known || it->str() == p;
    if (!known)
      throw InputError(path, "unknown placeholder " + it->str() +
                                 "; allowed: {port}, {host}, {delay_ms}, {threads}, {protocol}, {tls_cert}, "
                                 "{tls_key}, {catalog_dir}, {build_dir}");
    if (it->str() == kCatalogDir && dir.empty())
      throw InputError(path, "{catalog_dir} is only known in a catalog read from a file");
  }
  std::string out = text;
  for (size_t at = out.find(kCatalogDir); at != std::string::npos;
       at = out.find(kCatalogDir, at + dir.size()))
    out.replace(at, std::char_traits<char>::length(kCatalogDir), dir);
  return out;
}

// A relative path is relative to the catalog file's folder (`dir`), so a catalog and the
// programs beside it can move together; without a file it is an error.
std::string resolve_path(const std::string& p, const std::string& dir, const std::string& path,
                         const char* what) {
  if (!p.empty() && p[0] == '/') return p;
  if (dir.empty())
    throw InputError(path, std::string("must be an absolute path to the ") + what +
                               " (a relative one needs a catalog file to be relative to)");
  return (std::filesystem::path(dir) / p).lexically_normal().string();
}

// The entry's "argv": strings with known placeholders, the first an executable program.
void parse_argv(const ObjectReader& e, const std::string& dir, CatalogEntry& c) {
  if (!e.has("argv") || !e.at("argv").is_array() || e.at("argv").empty())
    throw InputError(e.path("argv"), "must be a non-empty array of strings");
  for (size_t i = 0; i < e.at("argv").size(); ++i) {
    const auto& a = e.at("argv")[i];
    std::string at = e.path("argv") + "/" + std::to_string(i);
    if (!a.is_string()) throw InputError(at, "must be a string");
    c.argv.push_back(check_placeholders(a.get<std::string>(), at, dir));
  }
  const std::string argv0 = e.path("argv") + "/0";
  if (c.argv[0].empty()) throw InputError(argv0, "must be the path to the program");
  // Built from a commit: the program is the build's, made only when a commit is built.
  if (c.argv[0].rfind(kBuildDir, 0) == 0) return;
  c.argv[0] = resolve_path(c.argv[0], dir, argv0, "program");
  if (access(c.argv[0].c_str(), X_OK) != 0)
    throw InputError(argv0, c.argv[0] + " is not an executable file on this machine");
}

// The entry's "readiness": how the agent sees the target is up, a TCP connect or an HTTP request.
void parse_readiness(const ObjectReader& e, CatalogEntry& c) {
  auto r = e.object("readiness");
  r.allow({"type", "path"});
  std::string type = r.string("type");
  if (type == "tcp") {
    c.readiness = CatalogEntry::Readiness::kTcp;
    if (r.has("path")) throw InputError(r.path("path"), "only for \"type\": \"http\"");
  } else if (type == "http") {
    c.readiness = CatalogEntry::Readiness::kHttp;
    c.http_path = r.string("path", "/");
    if (c.http_path.empty() || c.http_path[0] != '/' ||
        c.http_path.find_first_of(" \r\n") != std::string::npos)
      throw InputError(r.path("path"), "must start with '/' and hold no spaces or line breaks");
  } else {
    throw InputError(r.path("type"), "must be \"tcp\" or \"http\"");
  }
}

// The entry's "protocols": known protocols, each once, none over TLS with the "http" readiness probe.
void parse_protocols(const ObjectReader& e, CatalogEntry& c) {
  const auto& list = e.at("protocols");
  if (!list.is_array() || list.empty())
    throw InputError(e.path("protocols"), "must be a non-empty array of " + proto::protocol_names());
  c.protocols.clear();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = e.path("protocols") + "/" + std::to_string(i);
    auto p = list[i].is_string() ? proto::protocol_from_name(list[i].get<std::string>()) : std::nullopt;
    if (!p) throw InputError(at, "must be one of " + proto::protocol_names() + ", got " + list[i].dump());
    if (std::find(c.protocols.begin(), c.protocols.end(), *p) != c.protocols.end())
      throw InputError(at, "is listed twice");
    if (proto::uses_tls(*p) && c.readiness == CatalogEntry::Readiness::kHttp)
      throw InputError(at,
                       "is served over TLS, and the \"http\" readiness probe speaks plain HTTP: use "
                       "\"type\": \"tcp\"");
    c.protocols.push_back(*p);
  }
}

// The entry's "source": a repository and the command that builds a commit of it.
TargetSource parse_source(const ObjectReader& e, const std::string& dir) {
  auto o = e.object("source");
  o.allow({"repository", "build", "timeout_s"});
  TargetSource src;
  src.repository = o.string("repository");
  const bool url = src.repository.find("://") != std::string::npos;
  if (src.repository.empty() || src.repository[0] == '-')
    throw InputError(o.path("repository"), "must be a folder or a URL, not beginning with '-'");
  if (!url) {
    src.repository = resolve_path(src.repository, dir, o.path("repository"), "repository");
    if (!std::filesystem::is_directory(src.repository))
      throw InputError(o.path("repository"), src.repository + " is not a folder on this machine");
  }
  if (!o.has("build") || !o.at("build").is_array() || o.at("build").empty())
    throw InputError(o.path("build"), "must be a non-empty array of strings: the build command");
  for (size_t i = 0; i < o.at("build").size(); ++i) {
    const auto& a = o.at("build")[i];
    if (!a.is_string() || a.get<std::string>().empty())
      throw InputError(o.path("build") + "/" + std::to_string(i), "must be a non-empty string");
    src.build.push_back(a.get<std::string>());
  }
  const std::string at0 = o.path("build") + "/0";
  auto& program = src.build[0];
  program = program.find('/') == std::string::npos ? find_on_path(program)
                                                   : resolve_path(program, dir, at0, "program");
  if (program.empty() || access(program.c_str(), X_OK) != 0)
    throw InputError(at0, o.at("build")[0].get<std::string>() + " is not a program on this machine");
  src.timeout_s = static_cast<int>(o.integer("timeout_s", limits::kMinBuildTimeoutS,
                                             limits::kMaxBuildTimeoutS, limits::kDefaultBuildTimeoutS));
  return src;
}

// {build_dir} only where there is a build.
void check_build_dir_use(const ObjectReader& e, const CatalogEntry& c) {
  if (c.source) return;
  auto names = [](const std::string& t) { return t.find(kBuildDir) != std::string::npos; };
  bool used = names(c.cwd);
  for (auto& a : c.argv) used = used || names(a);
  for (auto& [k, v] : c.env) used = used || names(v);
  if (used) throw InputError(e.where(), "{build_dir} is only known in an entry with a \"source\"");
}

CatalogEntry parse_entry(const std::string& name, const ObjectReader& e, const std::string& dir) {
  e.allow({"argv", "env", "cwd", "readiness", "start_timeout_ms", "protocols", "instructions_unavailable",
           "source"});
  CatalogEntry c;
  c.name = name;
  if (e.has("source")) c.source = parse_source(e, dir);
  parse_argv(e, dir, c);
  c.env = e.string_map("env");
  for (auto& [k, v] : c.env) v = check_placeholders(v, e.path("env") + "/" + pointer_token(k), dir);
  c.cwd = e.string("cwd", c.source ? kBuildDir : "");
  if (c.cwd.rfind(kBuildDir, 0) == 0) {
    // The build's folder, known when the commit is built.
  } else if (!c.cwd.empty()) {
    c.cwd = resolve_path(check_placeholders(c.cwd, e.path("cwd"), dir), dir, e.path("cwd"), "folder");
    if (access(c.cwd.c_str(), X_OK) != 0)
      throw InputError(e.path("cwd"), c.cwd + " is not a folder on this machine");
  }
  if (e.has("readiness")) parse_readiness(e, c);
  c.start_timeout_ms = static_cast<uint32_t>(
      e.integer("start_timeout_ms", limits::kMinStartTimeoutMs, limits::kMaxStartTimeoutMs, 10000));
  if (e.has("protocols")) parse_protocols(e, c);
  c.instructions_unavailable = e.string("instructions_unavailable", "");
  auto names_tls_files = [](const std::string& t) {
    return t.find("{tls_cert}") != std::string::npos || t.find("{tls_key}") != std::string::npos;
  };
  for (auto& a : c.argv) c.tls_files = c.tls_files || names_tls_files(a);
  for (auto& [k, v] : c.env) c.tls_files = c.tls_files || names_tls_files(v);
  check_build_dir_use(e, c);
  return c;
}

// The Debian package that installs each tool, for the message when it is missing.
const char* package_of(clients::Tool tool) {
  switch (tool) {
    case clients::Tool::kWrk:
      return "wrk";
    case clients::Tool::kHey:
      return "hey";
    case clients::Tool::kH2load:
      return "nghttp2-client";
  }
  return "";
}

// The client, or nullopt when its tool is not installed at the default path.
std::optional<ClientEntry> parse_client(const std::string& name, const ObjectReader& e,
                                        const std::string& dir) {
  e.allow({"tool", "path"});
  ClientEntry c;
  c.name = name;
  auto tool = clients::parse_tool(e.string("tool"));
  if (!tool) throw InputError(e.path("tool"), "must be one of " + clients::tool_names());
  c.tool = *tool;
  const std::string fallback = "/usr/bin/" + std::string(clients::tool_name(c.tool));
  c.path = resolve_path(check_placeholders(e.string("path", fallback), e.path("path"), dir), dir,
                        e.path("path"), "program");
  if (access(c.path.c_str(), X_OK) != 0) {
    // A path the catalog names must be there; the default one is the tool's Debian
    // package, which this machine may not have: the client is left out, with a warning.
    if (e.has("path"))
      throw InputError(e.path("path"), c.path + " is not an executable file on this machine");
    component_logger("agent")->warn("{}: {} is not installed (apt-get install {}); the client {} is left out",
                                    e.where(), c.path, package_of(c.tool), name);
    return std::nullopt;
  }
  return c;
}

}  // namespace

Catalog::Catalog() {
  CatalogEntry hello;
  hello.name = "hello";
  hello.builtin = true;
  entries_.push_back(hello);
}

Catalog Catalog::parse(const nlohmann::json& j, const std::string& dir) {
  ObjectReader root(j, "");
  root.allow({"targets", "clients"});
  Catalog c;
  if (root.has("targets")) {
    auto targets = root.object("targets");
    for (auto& [name, value] : root.at("targets").items()) {
      std::string at = targets.path(name.c_str());
      if (name.empty() || name.find_first_of(" /\t") != std::string::npos)
        throw InputError(at, "a target name must be non-empty, without spaces or '/'");
      if (c.find(name)) throw InputError(at, "\"" + name + "\" is a built-in target; choose another name");
      c.entries_.push_back(parse_entry(name, ObjectReader(value, at), dir));
    }
  }
  if (root.has("clients")) {
    auto clients = root.object("clients");
    for (auto& [name, value] : root.at("clients").items()) {
      std::string at = clients.path(name.c_str());
      bool ok = !name.empty() && name.size() <= 64 && name != "loadlab";
      for (char ch : name)
        ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-');
      if (!ok)
        throw InputError(at,
                         "a client name is letters, digits, '.', '_', '-' (and not \"loadlab\", the "
                         "built-in client)");
      if (auto client = parse_client(name, ObjectReader(value, at), dir))
        c.clients_.push_back(std::move(*client));
    }
  }
  return c;
}

Catalog Catalog::load_file(const std::string& path) {
  auto dir = std::filesystem::absolute(path).lexically_normal().parent_path();
  return parse(read_json_file(path), dir.string());
}

const CatalogEntry* Catalog::find(const std::string& name) const {
  for (auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const ClientEntry* Catalog::find_client(const std::string& name) const {
  for (auto& e : clients_)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<std::string> Catalog::client_names() const {
  std::vector<std::string> out{"loadlab"};
  for (auto& e : clients_) out.push_back(e.name);
  return out;
}

std::vector<std::string> Catalog::names() const {
  std::vector<std::string> out;
  for (auto& e : entries_) out.push_back(e.name);
  return out;
}

std::string Catalog::names_joined() const {
  std::string out;
  for (auto& n : names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string expand_placeholders(const std::string& text, const Placeholders& p) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    auto try_replace = [&](const char* key, const std::string& value) {
      size_t n = std::char_traits<char>::length(key);
      if (text.compare(i, n, key) != 0) return false;
      out += value;
      i += n;
      return true;
    };
    if (try_replace("{port}", std::to_string(p.port)) || try_replace("{host}", p.host) ||
        try_replace("{delay_ms}", std::to_string(p.delay_ms)) ||
        try_replace("{threads}", std::to_string(p.threads)) || try_replace("{protocol}", p.protocol) ||
        try_replace("{tls_cert}", p.tls_cert) || try_replace("{tls_key}", p.tls_key))
      continue;
    out += text[i++];
  }
  return out;
}

CatalogEntry with_build_dir(const CatalogEntry& entry, const std::string& dir) {
  CatalogEntry c = entry;
  auto fill = [&](std::string& text) {
    const size_t n = std::char_traits<char>::length(kBuildDir);
    for (size_t at = text.find(kBuildDir); at != std::string::npos;
         at = text.find(kBuildDir, at + dir.size()))
      text.replace(at, n, dir);
  };
  for (auto& a : c.argv) fill(a);
  for (auto& [k, v] : c.env) fill(v);
  fill(c.cwd);
  return c;
}

}  // namespace loadlab::agent
