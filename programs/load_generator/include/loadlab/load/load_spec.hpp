#pragma once
// The protocol's LoadSpec and the worker's options are one thing in two forms: the agent
// turns a spec into options, checks them with the worker's own validator (so a spec the
// agent accepts is one the worker runs), and starts the worker with the command line made
// from them; the worker parses that command line back into the same options.
#include <string>
#include <vector>

#include "loadlab/load/load_options.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::load {

// The options a spec asks for (defaults filled as the worker would: path "/", GET,
// connections = threads, timeout 5000 ms).
LoadOptions options_from_spec(const v1::LoadSpec& spec);

// Returns if the worker would run `spec`; else throws InputError naming the spec's field
// or, after "LoadSpec (as loadlab-load flags): ", the worker flag it becomes, with what is
// allowed.
void validate_spec(const v1::LoadSpec& spec);

// The worker's command line for validated options, with --json-events. The body goes as
// --body-file `body_file` when one is given (a file holding options.body: one argument of
// execve holds at most 128 KiB, a body up to limits::kMaxBodyBytes), else as --body.
std::vector<std::string> command_line(const std::string& binary, const LoadOptions& options,
                                      const std::string& body_file = "");

}  // namespace loadlab::load
