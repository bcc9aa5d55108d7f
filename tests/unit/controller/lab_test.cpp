// lab.json's credentials: TLS files and the token file, for the lab or per agent, read
// relative to the lab file's folder; errors name the JSON path.
#include "loadlab/controller/lab.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "input_error_of.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::controller {
namespace {

using loadlab::testing::input_error_of;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class LabCredentials : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("loadlab-lab-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir / "pki");
    write("pki/ca.pem", "CA");
    write("pki/c.pem", "CERT");
    write("pki/c.key", "KEY");
    write("token", "  s3cret\n");
    write("other-token", "other\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; }
  Lab parse(const std::string& text) { return parse_lab(nlohmann::json::parse(text), dir.string()); }
  std::filesystem::path dir;
};

constexpr const char* kAgents = R"("agents": [
    {"name": "a", "address": "10.0.0.1:7700", "roles": ["target"]},
    {"name": "b", "address": "10.0.0.2:7700", "roles": ["load"], "token_file": "other-token",
     "tls": {"ca": "pki/ca.pem", "server_name": "agent-b"}}])";

TEST_F(LabCredentials, TheLabsCredentialsApplyToEachAgentThatGivesNoneOfItsOwn) {
  auto lab = parse(std::string(R"({"tls": {"ca": "pki/ca.pem", "cert": "pki/c.pem", "key": "pki/c.key"},
      "token_file": "token", )") +
                   kAgents + "}");
  const auto& a = lab.agents[0].credentials;
  EXPECT_EQ(a.ca_pem, "CA");
  EXPECT_EQ(a.cert_pem, "CERT");
  EXPECT_EQ(a.key_pem, "KEY");
  EXPECT_EQ(a.token, "s3cret");  // white space around it dropped
  EXPECT_EQ(a.server_name, "");
  // b's own tls replaces the lab's whole tls (no client certificate), its token the lab's.
  const auto& b = lab.agents[1].credentials;
  EXPECT_EQ(b.ca_pem, "CA");
  EXPECT_EQ(b.cert_pem, "");
  EXPECT_EQ(b.server_name, "agent-b");
  EXPECT_EQ(b.token, "other");
}

TEST_F(LabCredentials, ALabWithoutCredentialsHasNone) {
  auto lab = parse(R"({"agents": [{"name": "a", "address": "127.0.0.1:7700", "roles": ["load"]}]})");
  EXPECT_EQ(lab.agents[0].credentials.ca_pem, "");
  EXPECT_EQ(lab.agents[0].credentials.token, "");
}

TEST_F(LabCredentials, ErrorsNameThePathOfTheBadEntry) {
  auto with = [&](const std::string& top) {
    return input_error_of([&] { parse("{" + top + kAgents + "}"); });
  };
  EXPECT_THAT(with(R"("token_file": "missing", )"), StartsWith("/token_file: cannot read the file"));
  EXPECT_THAT(with(R"("tls": {"ca": "pki"}, )"), StartsWith("/tls/ca: cannot read the file"));  // a folder
  EXPECT_THAT(with(R"("token_file": "/dev/zero", )"),
              StartsWith("/token_file: cannot read the file"));  // endless
  write("pki/big.pem", std::string(limits::kMaxCredentialFileBytes + 1, 'x'));
  EXPECT_THAT(with(R"("tls": {"ca": "pki/big.pem"}, )"),
              HasSubstr("a regular file of at most 1048576 bytes"));
  EXPECT_THAT(with(R"("tls": {"ca": "pki/ca.pem", "cert": "pki/c.pem"}, )"),
              StartsWith("/tls: give both cert and key"));
  EXPECT_THAT(with(R"("tls": {"cert": "pki/c.pem", "key": "pki/c.key"}, )"), StartsWith("/tls/ca: "));
  EXPECT_THAT(with(R"("tls": {"ca": "pki/ca.pem", "password": "x"}, )"),
              StartsWith("/tls/password: unknown key"));
  write("token", "two words\n");
  EXPECT_THAT(with(R"("token_file": "token", )"), StartsWith("/token_file: the file must hold one token"));
  write("token", "\n\n");
  EXPECT_THAT(with(R"("token_file": "token", )"), StartsWith("/token_file: "));
  EXPECT_THAT(input_error_of([&] {
                parse(R"({"agents": [{"name": "a", "address": "127.0.0.1:1", "roles": ["load"],
                          "token_file": "nope"}]})");
              }),
              StartsWith("/agents/0/token_file: cannot read the file"));
}

}  // namespace
}  // namespace loadlab::controller
