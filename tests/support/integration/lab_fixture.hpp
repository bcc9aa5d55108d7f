#pragma once
// A lab of three agent processes on loopback ports (one target, two load) and its lab file:
// the fixture of the lab tests of tests/process/integration/lab_test.cpp and
// tests/timing/integration/lab_truth_test.cpp.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"

// Named, not anonymous: the fixture is one class in every file that uses it.
namespace loadlab::lab_fixture {

using testing::AgentProcess;
using testing::TempDir;

// A loopback port free now, for an agent that must come back on the same address. The
// kernel picks it and it is closed again: another process could take it in between, rarely.
inline std::string free_loopback_address() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

class LabTest : public ::testing::Test {
 protected:
  void SetUp() override { start("127.0.0.1:0"); }
  // cli1 listens on `cli1_listen`; srv and cli2 on ports the kernel picks.
  void start(const std::string& cli1_listen) {
    agents.emplace_back(std::make_unique<AgentProcess>("srv"));
    agents.emplace_back(std::make_unique<AgentProcess>("cli1", cli1_listen));
    agents.emplace_back(std::make_unique<AgentProcess>("cli2"));
    lab =
        dir.file("lab.json", R"({"agents": [
      {"name": "srv", "address": ")" +
                                 agents[0]->address + R"(", "roles": ["target"]},
      {"name": "cli1", "address": ")" +
                                 agents[1]->address + R"(", "roles": ["load"], "labels": {"rack": "a"}},
      {"name": "cli2", "address": ")" +
                                 agents[2]->address + R"(", "roles": ["load"], "labels": {"rack": "b"}}]})");
  }
  TempDir dir;
  std::vector<std::unique_ptr<AgentProcess>> agents;
  std::string lab;
};

}  // namespace loadlab::lab_fixture
