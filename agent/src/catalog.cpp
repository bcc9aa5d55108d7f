#include "loadlab/agent/catalog.hpp"

#include <unistd.h>

#include <regex>

#include "loadlab/shared/json_input.hpp"

namespace loadlab::agent {

namespace {

constexpr const char* kPlaceholders[] = {"{port}", "{host}", "{delay_ms}", "{threads}"};

// Every {word} in `text` must be a known placeholder.
void check_placeholders(const std::string& text, const std::string& path) {
  static const std::regex brace(R"(\{[A-Za-z_]*\})");
  for (std::sregex_iterator it(text.begin(), text.end(), brace), end; it != end; ++it) {
    bool known = false;
    for (auto* p : kPlaceholders) known = known || it->str() == p;
    if (!known)
      throw InputError(
          path, "unknown placeholder " + it->str() + "; allowed: {port}, {host}, {delay_ms}, {threads}");
  }
}

CatalogEntry parse_entry(const std::string& name, const ObjectReader& e) {
  e.allow({"argv", "env", "cwd", "readiness", "start_timeout_ms"});
  CatalogEntry c;
  c.name = name;
  if (!e.has("argv") || !e.at("argv").is_array() || e.at("argv").empty())
    throw InputError(e.path("argv"), "must be a non-empty array of strings");
  for (size_t i = 0; i < e.at("argv").size(); ++i) {
    const auto& a = e.at("argv")[i];
    std::string at = e.path("argv") + "/" + std::to_string(i);
    if (!a.is_string()) throw InputError(at, "must be a string");
    c.argv.push_back(a.get<std::string>());
    check_placeholders(c.argv.back(), at);
  }
  if (c.argv[0].empty() || c.argv[0][0] != '/')
    throw InputError(e.path("argv") + "/0", "must be an absolute path to the program");
  if (access(c.argv[0].c_str(), X_OK) != 0)
    throw InputError(e.path("argv") + "/0", c.argv[0] + " is not an executable file on this machine");
  c.env = e.string_map("env");
  for (auto& [k, v] : c.env) check_placeholders(v, e.path("env") + "/" + pointer_token(k));
  c.cwd = e.string("cwd", "");
  if (!c.cwd.empty() && access(c.cwd.c_str(), X_OK) != 0)
    throw InputError(e.path("cwd"), c.cwd + " is not a folder on this machine");
  if (e.has("readiness")) {
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
  c.start_timeout_ms = static_cast<uint32_t>(e.integer("start_timeout_ms", 100, 600000, 10000));
  return c;
}

}  // namespace

Catalog::Catalog() {
  CatalogEntry hello;
  hello.name = "hello";
  hello.builtin = true;
  entries_.push_back(hello);
}

Catalog Catalog::parse(const nlohmann::json& j) {
  ObjectReader root(j, "");
  root.allow({"targets"});
  Catalog c;
  auto targets = root.object("targets");
  for (auto& [name, value] : root.at("targets").items()) {
    std::string at = targets.path(name.c_str());
    if (name.empty() || name.find_first_of(" /\t") != std::string::npos)
      throw InputError(at, "a target name must be non-empty, without spaces or '/'");
    if (c.find(name)) throw InputError(at, "\"" + name + "\" is a built-in target; choose another name");
    c.entries_.push_back(parse_entry(name, ObjectReader(value, at)));
  }
  return c;
}

Catalog Catalog::load_file(const std::string& path) { return parse(read_json_file(path)); }

const CatalogEntry* Catalog::find(const std::string& name) const {
  for (auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
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
        try_replace("{threads}", std::to_string(p.threads)))
      continue;
    out += text[i++];
  }
  return out;
}

}  // namespace loadlab::agent
