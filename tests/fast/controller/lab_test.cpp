// lab.json's credentials: TLS files and the token file, for the lab or per agent, read
// relative to the lab file's folder; errors name the JSON path.
#include "lab/lab.hpp"

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
    write("token", "  s3cret-s3cret-s3cret\n");
    write("other-token", "other-other-other\n");
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
  EXPECT_EQ(a.token, "s3cret-s3cret-s3cret");  // white space around it dropped
  EXPECT_EQ(a.server_name, "");
  // b's own tls replaces the lab's whole tls (no client certificate), its token the lab's.
  const auto& b = lab.agents[1].credentials;
  EXPECT_EQ(b.ca_pem, "CA");
  EXPECT_EQ(b.cert_pem, "");
  EXPECT_EQ(b.server_name, "agent-b");
  EXPECT_EQ(b.token, "other-other-other");
}

// An agent's tls that names only the name its certificate holds keeps the lab's files; without
// a lab CA to keep, it still needs its own.
TEST_F(LabCredentials, AnAgentsServerNameAloneKeepsTheLabsCaAndClientCertificate) {
  auto lab = parse(R"({"tls": {"ca": "pki/ca.pem", "cert": "pki/c.pem", "key": "pki/c.key"},
      "agents": [{"name": "a", "address": "10.0.0.1:7700", "roles": ["target"],
                  "tls": {"server_name": "srv1"}}]})");
  const auto& a = lab.agents[0].credentials;
  EXPECT_EQ(a.ca_pem, "CA");
  EXPECT_EQ(a.cert_pem, "CERT");
  EXPECT_EQ(a.key_pem, "KEY");
  EXPECT_EQ(a.server_name, "srv1");
  EXPECT_THAT(input_error_of([&] {
                parse(R"({"agents": [{"name": "a", "address": "127.0.0.1:7700", "roles": ["load"],
                          "tls": {"server_name": "srv1"}}]})");
              }),
              StartsWith("/agents/0/tls/ca: "));
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
  write("token", "fifteen-chars-x\n");
  EXPECT_THAT(with(R"("token_file": "token", )"),
              StartsWith("/token_file: the file holds a token of 15 characters; at least 16"));
  EXPECT_THAT(input_error_of([&] {
                parse(R"({"agents": [{"name": "a", "address": "127.0.0.1:1", "roles": ["load"],
                          "token_file": "nope"}]})");
              }),
              StartsWith("/agents/0/token_file: cannot read the file"));
}

// A lab file may list any address: a token goes to an agent other machines can reach only
// over TLS, and to a loopback one (this machine) without.
TEST_F(LabCredentials, ATokenIsNeverSentInClearTextToANetworkAddress) {
  auto lab_of = [&](const std::string& address, const std::string& tls) {
    return input_error_of([&] {
      parse(R"({"token_file": "token", )" + tls + R"("agents": [{"name": "a", "address": ")" + address +
            R"(", "roles": ["load"]}]})");
    });
  };
  EXPECT_THAT(lab_of("10.0.0.1:7700", ""),
              StartsWith("/agents/0/address: 10.0.0.1:7700 can be reached from the network, and its token "
                         "would travel there in clear text"));
  EXPECT_THAT(lab_of("lab-host:7700", ""), StartsWith("/agents/0/address: "));
  EXPECT_THAT(lab_of("[fe80::1]:7700", ""), StartsWith("/agents/0/address: "));
  EXPECT_EQ(lab_of("10.0.0.1:7700", R"("tls": {"ca": "pki/ca.pem"}, )"), "");
  for (const char* local :
       {"127.0.0.1:7700", "127.1.2.3:7700", "[::1]:7700", "localhost:7700", "unix:/run/a"})
    EXPECT_EQ(lab_of(local, ""), "") << local;
}

// With --lab-credentials (a lab kept in the scenario repository), the lab names agents and
// nothing secret: every credential of it is refused, naming where it is; server_name, which
// proves nothing by itself, may stay.
TEST_F(LabCredentials, ALabKeptApartFromItsCredentialsMayNameNone) {
  write("credentials.json", R"({"tls": {"ca": "pki/ca.pem", "cert": "pki/c.pem", "key": "pki/c.key"},
                                "token_file": "token"})");
  auto agents_only = [&](const std::string& text) {
    write("lab.json", text);
    return load_lab_file((dir / "lab.json").string(), (dir / "credentials.json").string());
  };
  auto lab = agents_only(R"({"agents": [{"name": "a", "address": "10.0.0.1:7700", "roles": ["load"],
                              "tls": {"server_name": "a.lab"}}]})");
  EXPECT_EQ(lab.agents[0].credentials.ca_pem, "CA");
  EXPECT_EQ(lab.agents[0].credentials.key_pem, "KEY");
  EXPECT_EQ(lab.agents[0].credentials.token, "s3cret-s3cret-s3cret");
  EXPECT_EQ(lab.agents[0].credentials.server_name, "a.lab");
  const std::pair<const char*, const char*> refused[] = {
      {R"({"token_file": "token", "agents": []})", "/token_file: comes from --lab-credentials only"},
      {R"({"tls": {"ca": "pki/ca.pem"}, "agents": []})", "/tls/ca: comes from --lab-credentials only"},
      {R"({"agents": [{"name": "a", "address": "10.0.0.1:1", "roles": ["load"], "token_file": "token"}]})",
       "/agents/0/token_file: comes from --lab-credentials only"},
      {R"({"agents": [{"name": "a", "address": "10.0.0.1:1", "roles": ["load"], "tls": {"key": "pki/c.key"}}]})",
       "/agents/0/tls/key: comes from --lab-credentials only"},
  };
  for (const auto& [text, error] : refused)
    EXPECT_THAT(input_error_of([&] { agents_only(text); }), StartsWith(error)) << text;
  // The credentials file's own errors name it.
  write("credentials.json", R"({"token_file": "missing"})");
  try {
    agents_only(R"({"agents": []})");
    ADD_FAILURE() << "a credentials file naming a missing token file was taken";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), StartsWith("/token_file: cannot read the file"));
    EXPECT_EQ(e.file(), (dir / "credentials.json").string());
  }
}

}  // namespace
}  // namespace loadlab::controller
