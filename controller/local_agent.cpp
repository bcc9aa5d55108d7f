#include "local_agent.hpp"

#include "loadlab/agent/agent_service.hpp"

namespace loadlab::controller {

namespace {

class LocalAgent final : public EmbeddedAgent {
 public:
  explicit LocalAgent(const std::string& bin_dir) : server_(options(bin_dir)) {
    address_ = server_.start("127.0.0.1:0");
  }
  std::string address() const override { return address_; }
  void shutdown() override { server_.shutdown(1000); }

 private:
  static agent::AgentOptions options(const std::string& bin_dir) {
    agent::AgentOptions o;
    o.name = "embedded";
    o.bin_dir = bin_dir;
    return o;
  }
  agent::AgentServer server_;
  std::string address_;
};

}  // namespace

std::unique_ptr<EmbeddedAgent> start_local_agent(const std::string& bin_dir) {
  return std::make_unique<LocalAgent>(bin_dir);
}

}  // namespace loadlab::controller
