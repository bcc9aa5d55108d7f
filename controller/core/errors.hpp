#pragma once
// The failures the controller tells apart: a repetition that failed (another attempt may
// do better) and a lab that cannot be used at all.
#include <grpcpp/support/status.h>

#include <stdexcept>
#include <string>

#include "loadlab/shared/environment_error.hpp"

namespace loadlab::controller {

// A failed repetition; `phase` is one of start, ready, warmup, measure, usage, stop, or
// interrupted (the run is shutting down). `code` is the agent's gRPC status when one
// caused it (UNKNOWN otherwise), so that the retry loop can tell a lost agent from a
// request no agent will ever accept.
class CellError : public std::runtime_error {
 public:
  CellError(std::string phase, const std::string& message, grpc::StatusCode code = grpc::StatusCode::UNKNOWN)
      : std::runtime_error(phase + ": " + message), phase_(std::move(phase)), code_(code) {}
  const std::string& phase() const { return phase_; }
  grpc::StatusCode code() const { return code_; }

 private:
  std::string phase_;
  grpc::StatusCode code_;
};

// An agent's failure as a person reads it: its message, or the bare code without one.
inline std::string status_text(const grpc::Status& st) {
  return st.error_message().empty() ? "gRPC status " + std::to_string(st.error_code()) : st.error_message();
}

// The lab could not be used (no reachable agent for a role, a folder that cannot be written, ...):
// the exit status of a lab that cannot be used (README's table).
using loadlab::EnvironmentError;

}  // namespace loadlab::controller
