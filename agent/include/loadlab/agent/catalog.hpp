#pragma once
// The agent's catalog: the only way to name a program for the agent to run. The controller
// sends a name; the command line comes from this file on the agent's machine.
//
//   {"targets": {"go-nethttp": {"argv": ["/opt/peers/gohttp", "-addr", "{host}:{port}"],
//                               "env": {"GOMAXPROCS": "{threads}"}, "cwd": "/opt/peers",
//                               "readiness": {"type": "http", "path": "/"},
//                               "start_timeout_ms": 10000,
//                               "instructions_unavailable": "a JIT: counts move as it compiles"}}}
//
// Placeholders in argv and env values: {port} (a free port the agent picked), {host} (the
// address targets bind), {delay_ms}, {threads}, {protocol} (the job's: http1, https, h2, h2c,
// h3), {tls_cert} and {tls_key} (PEM files of a self-signed EC P-256 pair the agent makes for
// each job that uses them, removed with it); and, in argv, env and cwd, {catalog_dir} (the
// catalog file's folder, absolute). A relative argv[0] or cwd is relative to that folder.
// "protocols" lists what the entry serves (default ["http1"]): a TLS one (https, h2) with an
// "http" readiness probe is refused, the probe speaking plain HTTP.
// The built-in target "hello" is an implicit entry.
//
// A target built from a commit names its source; a scenario then names only the commit:
//
//   {"targets": {"mine": {"source": {"repository": "/srv/git/server.git",
//                                    "build": ["make", "server"], "timeout_s": 600},
//                         "argv": ["{build_dir}/server", "--port", "{port}"]}}}
//
// "repository": a folder (absolute, or relative to the catalog's) or a URL git fetches;
// "build": the command (argv, a program on the agent's PATH or a path) run in a clean checkout
// of the commit, as a job; "timeout_s": its limit (default limits::kDefaultBuildTimeoutS).
// {build_dir} (argv, env, cwd: the checkout once built; the default cwd) is known only in such
// an entry, and its argv[0] need not exist until the build made it.
//
// External load clients, run by RunLoad when a LoadSpec names them (LoadSpec.client):
//
//   {"clients": {"wrk": {"tool": "wrk", "path": "/usr/bin/wrk"}, "h2": {"tool": "h2load"}}}
//
// `tool` is one of wrk, hey, h2load (it decides the command line and the output's parser,
// agent/external_tools); `path` defaults to /usr/bin/TOOL, and a tool missing there is left out with
// a warning (an explicit path must exist). The built-in client "loadlab" (the
// agent's loadlab-load) is implicit.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loadlab/clients/tool.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

// Where a target built from a commit comes from (the entry's "source").
struct TargetSource {
  std::string repository;          // an absolute folder, or a URL
  std::vector<std::string> build;  // argv; argv[0] absolute
  int timeout_s = 0;
};

struct CatalogEntry {
  std::string name;
  bool builtin = false;           // the built-in loadlab-target
  std::vector<std::string> argv;  // argv[0] absolute; {catalog_dir} already filled in
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  enum class Readiness { kTcp, kHttp } readiness = Readiness::kTcp;
  std::string http_path = "/";
  uint32_t start_timeout_ms = 10000;
  std::vector<v1::Protocol> protocols{
      v1::PROTOCOL_HTTP1};  // served ("protocols"; built-in: set by the agent)
  bool tls_files = false;   // argv or env names {tls_cert} or {tls_key}
  // Why its instructions per request cannot be counted (a JIT such as the JVM's compiles while
  // it serves; a program that re-execs what valgrind cannot follow): a cell that asks says so.
  std::string instructions_unavailable;
  std::optional<TargetSource> source;  // built from a commit
};

struct ClientEntry {
  std::string name;
  clients::Tool tool = clients::Tool::kWrk;
  std::string path;  // absolute
};

struct Placeholders {
  std::string host;
  uint16_t port = 0;
  uint32_t delay_ms = 0;
  uint32_t threads = 0;
  std::string protocol = "http1";
  std::string tls_cert, tls_key;  // the job's PEM files, when the entry names them
};

class Catalog {
 public:
  Catalog();  // the built-in entries only
  // Throws loadlab::InputError naming the JSON path. `dir` is the absolute folder of the
  // catalog file, for {catalog_dir} and relative paths; "" (no file) makes them errors.
  [[nodiscard]] static Catalog parse(const nlohmann::json& j, const std::string& dir = "");
  static Catalog load_file(const std::string& path);

  [[nodiscard]] const CatalogEntry* find(const std::string& name) const;
  const ClientEntry* find_client(const std::string& name) const;  // nullptr: unknown or "loadlab"
  std::vector<std::string> client_names() const;                  // "loadlab" first
  std::vector<std::string> names() const;                         // built-ins first, then the file's in order
  std::string names_joined() const;

 private:
  std::vector<CatalogEntry> entries_;
  std::vector<ClientEntry> clients_;
};

// A target built from a commit, its build made in `dir`: {build_dir} filled in.
CatalogEntry with_build_dir(const CatalogEntry& entry, const std::string& dir);

// `text` with every placeholder replaced.
std::string expand_placeholders(const std::string& text, const Placeholders& p);

}  // namespace loadlab::agent
