#pragma once
// The agent a run without a lab starts inside the controller's process, reached over the
// same gRPC path as a remote agent. The controller library does not build one (it does not
// link the agent library): the `loadlab` binary, and tests, hand it a factory that does.
#include <functional>
#include <memory>
#include <string>

namespace loadlab::controller {

class EmbeddedAgent {
 public:
  // Stops the agent at once when shutdown() was not called (the run failed).
  virtual ~EmbeddedAgent() = default;
  // Where it listens: a loopback HOST:PORT.
  virtual std::string address() const = 0;
  // Gives its streams a grace period to end, then stops it. Called by the run's thread.
  virtual void shutdown() = 0;
};

// Starts an embedded agent on a loopback port whose loadlab-target and loadlab-load are in
// `bin_dir` ("" = the running executable's folder); throws std::runtime_error when it
// cannot listen.
using EmbeddedAgentFactory = std::function<std::unique_ptr<EmbeddedAgent>(const std::string& bin_dir)>;

}  // namespace loadlab::controller
