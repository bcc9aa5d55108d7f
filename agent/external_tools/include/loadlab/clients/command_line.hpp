#pragma once
// A LoadSpec as the command line of wrk, hey or h2load (docs/clients.md has the table).
//
// A spec the tool cannot run as asked is refused with loadlab::InputError{field, message}:
// `path()` is the LoadSpec field ("total_requests", "keep_alive", "headers/X-Y", ...) and the
// message names the tool and what it allows. Nothing is silently approximated: a count the
// tool would round, a remainder it would drop or a unit it cannot express is refused.
//
// Some specs need a file beside the command line: wrk sends a method other than GET or a
// body only from a Lua script, h2load reads a body only from a file. `aux_files` lists them
// (name and content); the caller writes them into a folder it owns and passes that folder
// to `command_line`, which refers to them there. All functions are pure and thread-safe.
#include <string>
#include <vector>

#include "loadlab/clients/tool.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::clients {

// The per-request timeout used when the spec leaves timeout_ms at 0: loadlab-load's own
// default, so the tools compare like for like (their defaults are 2 s, 20 s and none).
inline constexpr uint32_t kDefaultTimeoutMs = 5000;

struct AuxFile {
  std::string name;  // file name within the caller's folder
  std::string content;
};

// The protocols `tool` speaks (LoadSpec.protocol): wrk and hey HTTP/1.1 over TCP and TLS,
// h2load also HTTP/2 over TLS (ALPN h2) and in cleartext (h2c, prior knowledge). Over TLS
// none of them verifies the certificate or can force a version (they offer TLS 1.3 and take
// what the server picks), nor resume a session.
std::vector<v1::Protocol> protocols_of(Tool tool);

// Throws InputError when `tool` cannot run `spec` as asked.
void check_spec(Tool tool, const v1::LoadSpec& spec);

// The files the command line for `spec` refers to; empty for most specs. Checks the spec.
std::vector<AuxFile> aux_files(Tool tool, const v1::LoadSpec& spec);

// argv (program first) running `spec` with the tool at `program_path`. `aux_dir` is the
// folder holding aux_files(tool, spec); std::invalid_argument if they are needed and it is
// empty. Throws InputError as check_spec does.
std::vector<std::string> command_line(Tool tool, const std::string& program_path, const v1::LoadSpec& spec,
                                      const std::string& aux_dir = "");

// wrk's Lua script setting wrk.method and wrk.body (every byte of the body escaped).
std::string wrk_script(const v1::LoadSpec& spec);

}  // namespace loadlab::clients
