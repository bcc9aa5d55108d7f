// Fuzz target: the agent's checks of a gRPC request. The input is read as a serialized
// LoadSpec and as a serialized TargetSpec (what gRPC hands the service); each that parses
// goes through the agent's validator, and an accepted LoadSpec is turned into the worker's
// command line as RunLoad does next. InputError is the expected answer to a bad spec.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

#include "loadlab/agent/target_spec_check.hpp"
#include "loadlab/load/load_spec.hpp"
#include "loadlab/shared/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A string field that is not UTF-8 fails the parse, as it does in gRPC, with a log line
  // per input: noise here.
  const google::protobuf::LogSilencer quiet;
  const int n = static_cast<int>(size);
  loadlab::v1::LoadSpec load;
  if (load.ParseFromArray(data, n)) {
    try {
      loadlab::load::validate_spec(load);
      loadlab::load::command_line("loadlab-load", loadlab::load::options_from_spec(load));
    } catch (const loadlab::InputError&) {
    }
  }
  loadlab::v1::TargetSpec target;
  if (target.ParseFromArray(data, n)) {
    try {
      loadlab::agent::validate_target_spec(target);
    } catch (const loadlab::InputError&) {
    }
  }
  return 0;
}
