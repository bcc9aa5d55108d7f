// An agent that is not an open door: mutual TLS and a token refuse other callers before
// anything runs, load goes only where the agent's operator allows, limits are the agent's,
// an abandoned stream frees its slot, and a lab run works through all of it. Certificates
// are made at test time with the openssl command.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "agent_calls.hpp"
#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/timing.hpp"
#include "test_support.hpp"

namespace loadlab::agent {
namespace {

using namespace std::chrono_literals;
using loadlab::testing::AgentProcess;
using loadlab::testing::bin;
using loadlab::testing::child_pids;
using loadlab::testing::Hosted;
using loadlab::testing::load_to;
using loadlab::testing::LoadRun;
using loadlab::testing::result_cells;
using loadlab::testing::run_command;
using loadlab::testing::run_load;
using loadlab::testing::stub_for;
using loadlab::testing::TargetStream;
using loadlab::testing::TempDir;
using ::testing::HasSubstr;
using LoadStream = grpc::ClientReaderWriter<v1::LoadCommand, v1::LoadEvent>;

// A test CA with an agent certificate (for 127.0.0.1) and a controller client certificate,
// and another CA with a client certificate of its own.
struct Pki {
  explicit Pki(const TempDir& dir) : d(dir.path().string() + "/") {
    const std::string script = R"(set -e
cd ")" + d + R"("
key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
for ca in ca rogue-ca; do openssl req -x509 -new $key -keyout $ca.key -out $ca.pem -days 2 -subj /CN=$ca; done
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
printf 'extendedKeyUsage=clientAuth\n' > client.ext
sign() { openssl req -new $key -keyout $1.key -out $1.csr -subj /CN=$1
         openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -days 2 -out $1.pem -extfile $3; }
sign agent ca server.ext
sign controller ca client.ext
sign rogue rogue-ca client.ext
)";
    auto r = run_command({"/bin/sh", "-c", script}, 60s);
    EXPECT_EQ(r.code, 0) << r.output_tail;
  }
  std::string pem(const std::string& name) const { return read_file(d + name + ".pem"); }
  std::string key(const std::string& name) const { return read_file(d + name + ".key"); }
  std::string path(const std::string& file) const { return d + file; }
  static std::string read_file(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  TlsFiles agent_tls() const { return {path("agent.pem"), path("agent.key"), path("ca.pem")}; }
  std::string d;
};

grpc::Status describe(v1::Agent::Stub& stub, const std::string& token = "", v1::AgentInfo* out = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  v1::AgentInfo info;
  return stub.Describe(&ctx, v1::DescribeRequest(), out ? out : &info);
}

v1::TargetSpec hello(uint32_t threads = 1) {
  v1::TargetSpec s;
  s.set_builtin("hello");
  s.set_threads(threads);
  return s;
}

// The number of requests a loadlab-target has answered (its stats endpoint).
int64_t served(const std::string& endpoint) {
  auto j =
      nlohmann::json::parse(loadlab::testing::http_get_body(endpoint, "/__loadlab/stats"), nullptr, false);
  return j.is_object() && j.contains("requests") ? j["requests"].get<int64_t>() : -1;
}

class SecureAgentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto& s : servers) s->shutdown(0);
  }
  std::string start(AgentOptions o, const TlsFiles& tls = {}) {
    o.bin_dir = LOADLAB_BIN_DIR;
    servers.push_back(std::make_unique<AgentServer>(std::move(o)));
    return servers.back()->start("127.0.0.1:0", tls);
  }
  std::vector<std::unique_ptr<AgentServer>> servers;
};

// `o` with one target, "forker": a server with 5 children, past the process limit of 3 it
// sets; and the spec that hosts it.
AgentOptions with_forker(AgentOptions o) {
  o.limits.processes = 3;
  o.catalog = Catalog::parse(
      nlohmann::json{{"targets",
                      {{"forker",
                        {{"argv", {bin("loadlab-burn"), "--port", "{port}", "--children", "5"}},
                         {"readiness", {{"type", "tcp"}}}}}}}});
  return o;
}

v1::TargetSpec forker_spec() {
  v1::TargetSpec spec;
  spec.set_catalog("forker");
  return spec;
}

TEST_F(SecureAgentTest, MutualTlsAdmitsTheLabsControllerAndRefusesOthersBeforeAnyRpcRuns) {
  TempDir dir;
  Pki pki(dir);
  auto address = start(AgentOptions{}, pki.agent_tls());
  auto controller =
      stub_for(address, grpc::SslCredentials({pki.pem("ca"), pki.key("controller"), pki.pem("controller")}));
  EXPECT_TRUE(describe(*controller).ok());

  const std::pair<const char*, std::shared_ptr<grpc::ChannelCredentials>> refused[] = {
      {"no client certificate", grpc::SslCredentials({pki.pem("ca"), "", ""})},
      {"a client certificate of another CA",
       grpc::SslCredentials({pki.pem("ca"), pki.key("rogue"), pki.pem("rogue")})},
      {"no TLS", grpc::InsecureChannelCredentials()},
      {"an agent certificate the client does not trust",
       grpc::SslCredentials({pki.pem("rogue-ca"), pki.key("controller"), pki.pem("controller")})},
  };
  for (const auto& [what, creds] : refused) {
    auto stub = stub_for(address, creds);
    EXPECT_EQ(describe(*stub).error_code(), grpc::StatusCode::UNAVAILABLE) << what;
    Hosted h(*stub, hello());
    EXPECT_EQ(h.endpoint, "") << what;
    EXPECT_EQ(h.close().error_code(), grpc::StatusCode::UNAVAILABLE) << what;
    EXPECT_TRUE(child_pids().empty()) << what << ": a target was started";
  }
  // The right client hosts a target through the same agent.
  Hosted h(*controller, hello());
  EXPECT_NE(h.endpoint, "");
  EXPECT_TRUE(h.close().ok());
}

TEST(AgentToken, AMissingOrWrongTokenIsUnauthenticatedSpawnsNothingAndIsLogged) {
  TempDir dir;
  auto token_file = dir.secret("token", "right-token-0123456789\n");
  AgentProcess agent("t", "127.0.0.1:0", {"--token-file", token_file});
  auto stub = stub_for(agent.address, grpc::InsecureChannelCredentials());
  auto st = describe(*stub);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("no authorization metadata"));
  EXPECT_EQ(describe(*stub, "wrong-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(describe(*stub, "right-token-01234567890").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  Hosted h(*stub, hello(), "wrong-token");
  EXPECT_EQ(h.endpoint, "");
  EXPECT_EQ(h.close().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(run_load(*stub, load_to("127.0.0.1:9"), "wrong-token").status.error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(loadlab::testing::tree_pids(agent.proc->pid()).size(), 1u) << "the agent spawned a child";

  v1::AgentInfo info;
  ASSERT_TRUE(describe(*stub, "right-token-0123456789", &info).ok());
  EXPECT_EQ(info.name(), "t");
  Hosted ok(*stub, hello(), "right-token-0123456789");
  EXPECT_NE(ok.endpoint, "");
  EXPECT_TRUE(ok.close().ok());

  kill(agent.proc->pid(), SIGTERM);
  agent.proc->wait_exit(5s);
  agent.proc->wait_output_end(2s);
  const auto log = agent.proc->output_tail(60);
  EXPECT_THAT(log, HasSubstr("refused Describe from ipv4:127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("no authorization metadata"));
  EXPECT_THAT(log, HasSubstr("refused HostTarget from ipv4:127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("refused RunLoad from ipv4:127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("a wrong token"));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("right-token")));  // a secret is never logged
}

TEST(AgentListen, ANetworkAddressNeedsTlsOrAnExplicitInsecure) {
  auto r = run_command({bin("loadlab-agent"), "--listen", "0.0.0.0:0"}, 10s);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.output_tail, HasSubstr("--listen: 0.0.0.0:0 can be reached from the network"));
  EXPECT_THAT(r.output_tail, HasSubstr("--insecure"));
  r = run_command({bin("loadlab-agent"), "--listen", "[::]:0"}, 10s);
  EXPECT_EQ(r.code, 2);
  r = run_command({bin("loadlab-agent"), "--tls-cert", "/etc/hostname"}, 10s);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.output_tail, HasSubstr("--tls-cert, --tls-key: give both"));

  AgentProcess agent("open", "0.0.0.0:0", {"--insecure"});
  const auto port = agent.address.substr(agent.address.rfind(':'));
  auto stub = stub_for("127.0.0.1" + port, grpc::InsecureChannelCredentials());
  EXPECT_TRUE(describe(*stub).ok());
  kill(agent.proc->pid(), SIGTERM);
  agent.proc->wait_exit(5s);
  agent.proc->wait_output_end(2s);
  const auto log = agent.proc->output_tail(40);
  EXPECT_THAT(log, HasSubstr("--insecure: 0.0.0.0:"));  // at start
  EXPECT_THAT(log, HasSubstr("Describe from ipv4:127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("without proving its callers (--insecure)"));  // at every Describe
}

// Without --advertise an agent that listens on one address serves its targets there (a lab
// agent on its lab interface), and one on a wildcard on loopback; --advertise says otherwise.
TEST(AgentListen, TargetsAreServedWhereTheAgentListensUnlessAdvertiseSaysOtherwise) {
  auto endpoint_of = [](const std::string& listen, const std::vector<std::string>& extra) {
    AgentProcess agent("adv", listen, extra);
    const auto port = agent.address.substr(agent.address.rfind(':'));
    auto stub =
        stub_for(listen.substr(0, listen.rfind(':')) == "0.0.0.0" ? "127.0.0.1" + port : agent.address,
                 grpc::InsecureChannelCredentials());
    Hosted h(*stub, hello());
    const std::string endpoint = h.endpoint;
    EXPECT_TRUE(h.close().ok());
    return endpoint;
  };
  EXPECT_THAT(endpoint_of("127.0.0.2:0", {}), ::testing::StartsWith("127.0.0.2:"));
  EXPECT_THAT(endpoint_of("127.0.0.2:0", {"--advertise", "127.0.0.3"}), ::testing::StartsWith("127.0.0.3:"));
  EXPECT_THAT(endpoint_of("0.0.0.0:0", {"--insecure"}), ::testing::StartsWith("127.0.0.1:"));
}

TEST_F(SecureAgentTest, LoadGoesOnlyWhereTheOperatorAllowsAndAThirdPartyGetsNoRequest) {
  auto spawn_target = [](const std::string& listen) {
    auto p = ChildProcess::spawn({bin("loadlab-target"), "--listen", listen, "--threads", "1"});
    std::string line;
    EXPECT_EQ(p->next_line(line, 10s), ChildProcess::LineStatus::kLine);
    return std::make_pair(std::move(p), line.substr(13));
  };
  auto [third_party, third] = spawn_target("127.0.0.2:0");  // stands for a host outside the lab
  auto [ours_proc, ours] = spawn_target("127.0.0.1:0");
  AgentOptions o;
  o.allow_load_to = NetworkList::parse({"127.0.0.1/32"}, "--allow-load-to");
  auto stub = stub_for(start(o), grpc::InsecureChannelCredentials());

  auto r = run_load(*stub, load_to(third));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(r.status.error_message(), HasSubstr("endpoint: \"127.0.0.2\" is 127.0.0.2, outside"));
  EXPECT_THAT(r.status.error_message(), HasSubstr("--allow-load-to 127.0.0.1/32"));
  auto via_host = load_to(ours);
  (*via_host.mutable_headers())["Host"] = third;
  r = run_load(*stub, via_host);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(r.status.error_message(), HasSubstr("headers/Host"));

  r = run_load(*stub, load_to(ours, 150));
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.requests, 150u);
  EXPECT_EQ(served(ours), 150);
  EXPECT_EQ(served(third), 0);
}

TEST_F(SecureAgentTest, ASpecOverTheAgentsLimitsIsInvalidArgumentNamingTheLimit) {
  AgentOptions o;
  o.limits.threads = 2;
  o.limits.duration_s = 5;
  auto stub = stub_for(start(o), grpc::InsecureChannelCredentials());
  auto spec = load_to("127.0.0.1:9");
  spec.set_threads(3);
  auto r = run_load(*stub, spec);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(),
              HasSubstr("threads: 3 is over this agent's limit of 2 (loadlab-agent --max-threads)"));
  spec.set_threads(1);
  spec.set_duration_s(6);
  r = run_load(*stub, spec);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("--max-duration-s"));
  Hosted h(*stub, hello(3));
  EXPECT_EQ(h.endpoint, "");
  auto st = h.close();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("--max-threads"));
  auto slow = hello();
  slow.set_start_timeout_ms(limits::kMaxStartTimeoutMs + 1);  // every number has a range
  Hosted h2(*stub, slow);
  st = h2.close();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("start_timeout_ms: must be 0 (the catalog's) or 100..600000"));
  EXPECT_TRUE(child_pids().empty());
}

TEST_F(SecureAgentTest, AStreamItsPeerAbandonsIsEndedAndItsSlotFreedWhileHeartbeatsKeepOneAlive) {
  AgentOptions o;
  o.limits.idle_timeout_s = limits::kMinIdleTimeoutS;
  auto quiet = stub_for(start(o), grpc::InsecureChannelCredentials());
  auto beating = stub_for(start(o), grpc::InsecureChannelCredentials());
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  // A controller that heartbeats like the real one keeps its target past the timeout.
  auto kept = std::async(std::launch::async, [&] {
    Hosted h(*beating, hello());
    v1::TargetCommand beat;
    beat.mutable_mark()->set_kind(v1::Mark::HEARTBEAT);
    bool alive = !h.endpoint.empty();
    while (alive && seconds_since_start() < limits::kMinIdleTimeoutS + 4) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timing::kHeartbeatMs / 5));
      alive = h.stream->Write(beat);
    }
    alive = alive && served(h.endpoint) == 0;  // still up and answering
    return alive && h.close().ok();
  });
  // A target that died (its Exited written by the agent's sampler thread while the job's
  // thread waits to read) and whose controller then went quiet: ended too.
  auto dying = stub_for(start(with_forker(o)), grpc::InsecureChannelCredentials());
  Hosted dead(*dying, forker_spec());
  auto died = std::async(std::launch::async, [&] {
    v1::TargetEvent ev;
    while (dead.stream->Read(&ev)) {
    }
    return std::make_pair(dead.stream->Finish(), seconds_since_start());
  });
  // A RunLoad whose spec never comes holds no slot but a thread: it is ended too.
  auto no_spec = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    auto stream = quiet->RunLoad(&ctx);
    v1::LoadEvent ev;
    while (stream->Read(&ev)) {
    }
    return std::make_pair(stream->Finish(), seconds_since_start());
  });
  Hosted h(*quiet, hello());
  ASSERT_NE(h.endpoint, "");
  v1::TargetEvent ev;
  while (h.stream->Read(&ev)) {
  }
  const double ended_after = seconds_since_start();
  EXPECT_EQ(h.stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_GT(ended_after, limits::kMinIdleTimeoutS - 0.5);
  EXPECT_LT(ended_after, limits::kMinIdleTimeoutS + 5);
  for (int i = 0; i < 50 && loadlab::testing::process_running(h.pid); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(loadlab::testing::process_running(h.pid)) << "the abandoned target still runs";
  Hosted next(*quiet, hello());  // the slot is free again
  EXPECT_NE(next.endpoint, "");
  EXPECT_TRUE(next.close().ok());

  auto [status, after] = no_spec.get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_GT(after, limits::kMinIdleTimeoutS - 0.5);
  EXPECT_TRUE(kept.get()) << "a heartbeating stream was ended";
  if (died.wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "the stream of a dead target whose controller went quiet was not ended";
    dead.ctx.TryCancel();
  }
  auto [died_status, died_after] = died.get();
  EXPECT_EQ(died_status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_GT(died_after, limits::kMinIdleTimeoutS - 0.5);
  EXPECT_LT(died_after, limits::kMinIdleTimeoutS + 5);
}

TEST_F(SecureAgentTest, ATargetWhoseTreeGrowsPastTheProcessLimitIsStoppedSayingWhy) {
  auto stub = stub_for(start(with_forker(AgentOptions())), grpc::InsecureChannelCredentials());
  Hosted h(*stub, forker_spec());
  ASSERT_NE(h.endpoint, "");
  std::string tail;
  for (v1::TargetEvent ev; tail.empty() && h.stream->Read(&ev);)
    if (ev.has_exited()) tail = ev.exited().output_tail();
  EXPECT_THAT(tail, HasSubstr("over this agent's limit of 3 (loadlab-agent --max-processes)"));
  auto st = h.close();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("--max-processes"));
  EXPECT_FALSE(loadlab::testing::process_running(h.pid));
}

// The whole lab through mutual TLS and a token, with a load longer than the agents' idle
// timeout (the controller's heartbeats keep the target's stream), and the same lab with a
// wrong token.
TEST(SecureLab, ARunGoesThroughMutualTlsAndTheTokenLabJsonNames) {
  TempDir dir;
  Pki pki(dir);
  auto token = dir.secret("token", "lab-token-1-0123456789\n");
  const std::vector<std::string> secure{"--tls-cert",       pki.path("agent.pem"),
                                        "--tls-key",        pki.path("agent.key"),
                                        "--tls-client-ca",  pki.path("ca.pem"),
                                        "--token-file",     token,
                                        "--idle-timeout-s", std::to_string(limits::kMinIdleTimeoutS)};
  AgentProcess srv("srv", "127.0.0.1:0", secure), cli("cli", "127.0.0.1:0", secure);
  auto lab_with = [&](const std::string& token_file) {
    return dir.file("lab-" + token_file + ".json",
                    R"({"tls": {"ca": "ca.pem", "cert": "controller.pem", "key": "controller.key"},
                        "token_file": ")" +
                        token_file + R"(", "agents": [
      {"name": "srv", "address": ")" +
                        srv.address + R"(", "roles": ["target"]},
      {"name": "cli", "address": ")" +
                        cli.address + R"(", "roles": ["load"]}]})");
  };
  auto scenario = dir.file("s.json", R"({"name": "secure", "targets": [{"name": "b", "builtin": "hello",
      "server_threads": 1}], "matrix": {"delay_ms": [5], "threads": [2]},
      "load": {"duration_s": )" + std::to_string(limits::kMinIdleTimeoutS + 3) +
                                         "}}");
  auto out = dir.path() / "out";
  auto r =
      run_command({bin("loadlab"), "run", scenario, "--lab", lab_with("token"), "--out", out.string()}, 120s);
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  // Two closed loops on a 5 ms server: at most 400 requests/s (Little's law), and at least half
  // of that unless something blocks; how close to 400 is this machine's speed, not the TLS path's.
  EXPECT_LE(cells[0].repetitions(0).qps(), 400 * 1.02);
  EXPECT_GE(cells[0].repetitions(0).qps(), 200);
  EXPECT_EQ(cells[0].repetitions(0).errors(), 0u);

  dir.secret("wrong-token", "lab-token-2-0123456789\n");
  r = run_command({bin("loadlab"), "run", scenario, "--lab", lab_with("wrong-token"), "--out",
                   (dir.path() / "out2").string()},
                  60s);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.output_tail, HasSubstr("requires its token"));
}

// A lab file whose TLS does not fit the agent is reported by its cause and what to set, not
// as an unavailable channel or a deadline: a name the certificate does not hold, a CA that did
// not sign it, a client certificate the agent refuses or does not get, an agent without TLS.
TEST(SecureLab, ATlsMismatchIsReportedByItsCauseAndWhatToSet) {
  TempDir dir;
  Pki pki(dir);
  AgentProcess agent("srv", "127.0.0.1:0",
                     {"--tls-cert", pki.path("agent.pem"), "--tls-key", pki.path("agent.key"),
                      "--tls-client-ca", pki.path("ca.pem")});
  AgentProcess plain("plain", "127.0.0.1:0");
  auto agents_with = [&](const std::string& tls, const std::string& address) {
    const auto lab =
        dir.file("lab.json", R"({"tls": )" + tls + R"(, "agents": [{"name": "srv", "address": ")" + address +
                                 R"(", "roles": ["target"]}]})");
    return run_command({bin("loadlab"), "agents", "--lab", lab}, 60s).stdout_text;
  };
  const std::string mutual = R"("cert": "controller.pem", "key": "controller.key")";
  EXPECT_THAT(agents_with(R"({"ca": "ca.pem", )" + mutual + R"(, "server_name": "srv1.lab"})", agent.address),
              HasSubstr("the agent's certificate is for IP:127.0.0.1, not srv1.lab: set this agent's "
                        "tls.server_name"));
  EXPECT_THAT(agents_with(R"({"ca": "rogue-ca.pem", )" + mutual + "}", agent.address),
              HasSubstr("the agent's certificate is not signed by the lab file's tls.ca"));
  EXPECT_THAT(agents_with(R"({"ca": "ca.pem", "cert": "rogue.pem", "key": "rogue.key"})", agent.address),
              HasSubstr("the agent refused the controller's client certificate"));
  EXPECT_THAT(agents_with(R"({"ca": "ca.pem"})", agent.address), HasSubstr("the agent asks for one"));
  EXPECT_THAT(agents_with(R"({"ca": "ca.pem", )" + mutual + "}", plain.address),
              HasSubstr("the agent does not speak TLS at"));
  EXPECT_THAT(agents_with(R"({"ca": "ca.pem", )" + mutual + "}", agent.address), HasSubstr("srv"));
}

// ---- An agent that is safe on a real network (issue 24): tests named after its items ----

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// A network namespace with an address no other machine has (10.214.0.1 on a veth pair of its
// own): an address other machines could reach, as the agent and controller judge it, that
// this test made itself.
class NetworkHost {
 public:
  NetworkHost() : ns_("llsec" + std::to_string(getpid())) {
    ok_ = geteuid() == 0 && sh("ip netns add " + ns_) && sh("ip -n " + ns_ + " link set lo up") &&
          sh("ip -n " + ns_ + " link add v0 type veth peer name v1") &&
          sh("ip -n " + ns_ + " addr add 10.214.0.1/24 dev v0") && sh("ip -n " + ns_ + " link set v0 up") &&
          sh("ip -n " + ns_ + " link set v1 up");
  }
  ~NetworkHost() { sh("ip netns del " + ns_); }
  bool ok() const { return ok_; }
  std::vector<std::string> in(std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {"/usr/sbin/ip", "netns", "exec", ns_});
    return argv;
  }

 private:
  std::string ns_;
  bool ok_ = false;
};

#define NEEDS_NETWORK_HOST(host)                                                         \
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace (CI is root)"; \
  if (!(host).ok()) GTEST_SKIP() << "this machine cannot make a network namespace"

// Item 1: server-only TLS proves who the agent is, not who calls it: on a network address
// the agent starts only with a client CA or a token (or --insecure, warned).
TEST(CallersProven, ServerOnlyTlsOnANamespaceAddressRefusesToStart) {
  NetworkHost host;
  NEEDS_NETWORK_HOST(host);
  TempDir dir;
  Pki pki(dir);
  const auto token = dir.secret("token", "0123456789abcdef0123\n");
  const std::vector<std::string> server_tls{"--tls-cert", pki.path("agent.pem"), "--tls-key",
                                            pki.path("agent.key")};
  auto agent_argv = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{bin("loadlab-agent"), "--listen", "10.214.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return host.in(argv);
  };
  auto r = run_command(agent_argv(server_tls), 10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail,
              HasSubstr("TLS without --tls-client-ca proves who this agent is, not who calls it"));
  EXPECT_THAT(r.output_tail, HasSubstr("add --tls-client-ca"));
  EXPECT_THAT(r.output_tail, HasSubstr("--token-file"));
  // With a way to prove callers it serves; with --insecure too, warned.
  for (const auto& extra :
       {std::vector<std::string>{"--tls-client-ca", pki.path("ca.pem")},
        std::vector<std::string>{"--token-file", token}, std::vector<std::string>{"--insecure"}}) {
    auto argv = server_tls;
    argv.insert(argv.end(), extra.begin(), extra.end());
    AgentProcess agent("n", "10.214.0.1:0", argv, host.in({}));
    EXPECT_THAT(agent.address, HasSubstr("10.214.0.1:")) << extra[0] << ": " << agent.proc->output_tail();
    if (extra[0] == "--insecure") {
      kill(agent.proc->pid(), SIGTERM);
      agent.proc->wait_exit(5s);
      agent.proc->wait_output_end(2s);
      EXPECT_THAT(agent.proc->output_tail(), HasSubstr("with TLS but no proof of its callers"));
    }
  }
}

// Item 1, the other way round: a lab file may list any address, and the controller sends a
// token there only over TLS. The agent below would take the token in clear text (--insecure);
// the controller refuses before it calls: the agent logs no call at all.
TEST(CallersProven, TheControllerRefusesToSendATokenInClearToANamespaceAddress) {
  NetworkHost host;
  NEEDS_NETWORK_HOST(host);
  TempDir dir;
  const auto token = dir.secret("token", "0123456789abcdef0123\n");
  AgentProcess agent("n", "10.214.0.1:0", {"--insecure", "--token-file", token}, host.in({}));
  ASSERT_THAT(agent.address, HasSubstr("10.214.0.1:")) << agent.proc->output_tail();
  auto lab = dir.file("lab.json", R"({"token_file": "token", "agents": [{"name": "n", "address": ")" +
                                      agent.address + R"(", "roles": ["target", "load"]}]})");
  auto r = run_command(host.in({bin("loadlab"), "agents", "--lab", lab}), 30s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail,
              HasSubstr("/agents/0/address: " + agent.address +
                        " can be reached from the network, and its token would travel there in "
                        "clear text"));
  kill(agent.proc->pid(), SIGTERM);
  agent.proc->wait_exit(5s);
  agent.proc->wait_output_end(2s);
  EXPECT_THAT(agent.proc->output_tail(60), ::testing::Not(HasSubstr("Describe from")));
}

// Item 2: `Host` and `hOST` are one header; a client sends both (HTTP/1.1) or the last
// (:authority over h2/h3), so the agent refuses the pair instead of checking the first.
TEST_F(SecureAgentTest, HostAndhOSTAreRefusedAndTheThirdPartyGetsNoRequest) {
  auto third_party =
      ChildProcess::spawn({bin("loadlab-target"), "--listen", "127.0.0.2:0", "--threads", "1"});
  auto ours_proc = ChildProcess::spawn({bin("loadlab-target"), "--listen", "127.0.0.1:0", "--threads", "1"});
  std::string third, ours;
  ASSERT_EQ(third_party->next_line(third, 10s), ChildProcess::LineStatus::kLine);
  ASSERT_EQ(ours_proc->next_line(ours, 10s), ChildProcess::LineStatus::kLine);
  third = third.substr(13);
  ours = ours.substr(13);
  AgentOptions o;
  o.allow_load_to = NetworkList::parse({"127.0.0.1/32"}, "--allow-load-to");
  auto stub = stub_for(start(o), grpc::InsecureChannelCredentials());
  for (auto protocol : {v1::PROTOCOL_HTTP1, v1::PROTOCOL_H2C}) {
    auto spec = load_to(ours);
    spec.set_protocol(protocol);
    (*spec.mutable_headers())["Host"] = ours;
    (*spec.mutable_headers())["hOST"] = third;
    auto r = run_load(*stub, spec);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(r.status.error_message(), HasSubstr("headers/hOST: names the same header as headers/Host"));
  }
  EXPECT_EQ(served(third), 0);
  EXPECT_EQ(served(ours), 0);
}

// Item 2: hey follows redirects unless told not to; an allowed server that redirects would
// carry the load on to any address. The agent runs hey with -disable-redirects.
TEST(Redirects, HeyDoesNotFollowARedirectToAnAddressOutsideTheAllowList) {
  if (access("/usr/bin/hey", X_OK) != 0) GTEST_SKIP() << "hey is not installed (make deps installs it)";
  auto third_party =
      ChildProcess::spawn({bin("loadlab-target"), "--listen", "127.0.0.2:0", "--threads", "1"});
  std::string third;
  ASSERT_EQ(third_party->next_line(third, 10s), ChildProcess::LineStatus::kLine);
  third = third.substr(13);
  TempDir dir;
  // An allowed server that answers every request with a redirect to the third party, and
  // counts them in a stats endpoint as loadlab-target's (read by served(), not counted).
  auto script = dir.file("redirect.py", R"(import http.server, json, sys, threading
lock, count = threading.Lock(), [0]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/__loadlab/stats":
            with lock:
                body = json.dumps({"requests": count[0]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        with lock:
            count[0] += 1
        self.send_response(302)
        self.send_header("Location", "http://" + sys.argv[1] + "/")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print("listening on 127.0.0.1:%d" % s.server_address[1], flush=True)
s.serve_forever()
)");
  auto redirector = ChildProcess::spawn({"/usr/bin/python3", script, third});
  std::string line;
  ASSERT_EQ(redirector->next_line(line, 10s), ChildProcess::LineStatus::kLine);
  const std::string allowed = line.substr(13);

  AgentOptions o;
  o.bin_dir = LOADLAB_BIN_DIR;
  o.allow_load_to = NetworkList::parse({"127.0.0.1/32"}, "--allow-load-to");
  o.catalog = Catalog::parse(nlohmann::json{{"clients", {{"hey", {{"tool", "hey"}}}}}});
  AgentServer server(o);
  auto stub = stub_for(server.start("127.0.0.1:0"), grpc::InsecureChannelCredentials());
  auto spec = load_to(allowed, 20);
  spec.set_client("hey");
  spec.set_connections(1);
  auto r = run_load(*stub, spec);
  server.shutdown(0);
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(served(third), 0) << "hey followed the redirect past --allow-load-to";
  // The other side: the load did run, against the allowed server (each request answered 302).
  EXPECT_EQ(served(allowed), 20) << "hey did not load the allowed server";
}

// Item 3: a job's processes are the job's wherever they go.

// The pids a script of the test wrote into `file`, one per line.
std::vector<pid_t> pids_in(const std::string& file) {
  std::ifstream f(file);
  std::vector<pid_t> out;
  for (pid_t p; f >> p;) out.push_back(p);
  return out;
}

// Waits up to 5 s for none of `pids` to run; kills (by pid) and names those that still do.
std::vector<pid_t> still_running(const std::vector<pid_t>& pids) {
  std::vector<pid_t> left;
  for (int i = 0; i < 50; ++i) {
    left.clear();
    for (pid_t p : pids)
      if (loadlab::testing::process_running(p)) left.push_back(p);
    if (left.empty()) break;
    std::this_thread::sleep_for(100ms);
  }
  for (pid_t p : left) kill(p, SIGKILL);  // cleanup: the test's own processes, by pid
  return left;
}

// A catalog target whose shell does `script` and then execs loadlab-target on the agent's port.
AgentOptions with_script_target(AgentOptions o, const std::string& script) {
  o.catalog = Catalog::parse(nlohmann::json{
      {"targets",
       {{"scripted",
         {{"argv",
           {"/bin/sh", "-c",
            script + "\nexec " + bin("loadlab-target") + " --listen {host}:{port} --threads 1"}},
          {"readiness", {{"type", "http"}, {"path", "/"}}}}}}}});
  return o;
}

v1::TargetSpec scripted_spec() {
  v1::TargetSpec spec;
  spec.set_catalog("scripted");
  return spec;
}

// A fork loop of orphans (each `sh` forks a sleep and exits at once): out of the target's
// tree, but the job's. It is stopped past --max-processes, and not one orphan outlives it.
TEST_F(SecureAgentTest, AForkLoopOfOrphansIsStoppedByTheProcessLimit) {
  TempDir dir;
  const std::string pids = (dir.path() / "pids").string();
  AgentOptions o;
  o.limits.processes = 20;
  auto stub = stub_for(start(with_script_target(
                           o, "(sleep 1; while :; do sh -c 'sleep 30 & echo $! >> " + pids + "'; done) &")),
                       grpc::InsecureChannelCredentials());
  Hosted h(*stub, scripted_spec());
  ASSERT_NE(h.endpoint, "");
  std::string tail;
  for (v1::TargetEvent ev; tail.empty() && h.stream->Read(&ev);)
    if (ev.has_exited()) tail = ev.exited().output_tail();
  EXPECT_THAT(tail, HasSubstr("over this agent's limit of 20 (loadlab-agent --max-processes)"));
  auto st = h.close();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  const auto orphans = pids_in(pids);
  EXPECT_GT(orphans.size(), 10u);
  EXPECT_EQ(still_running(orphans), std::vector<pid_t>{}) << "orphans of the job outlived it";
}

// A daemon of the target (setsid, its parent gone: another session, re-parented) is gone
// after the job, on the process-group path too, where no cgroup holds it.
TEST_F(SecureAgentTest, ASetsidDaemonOfATargetIsGoneAfterTheJob) {
  TempDir dir;
  const std::string pids = (dir.path() / "pids").string();
  auto stub =
      stub_for(start(with_script_target(AgentOptions{}, "(setsid sleep 30 & echo $! > " + pids + ")")),
               grpc::InsecureChannelCredentials());
  Hosted h(*stub, scripted_spec());
  ASSERT_NE(h.endpoint, "");
  const auto daemon = pids_in(pids);
  ASSERT_EQ(daemon.size(), 1u);
  EXPECT_TRUE(loadlab::testing::process_running(daemon[0]));
  EXPECT_TRUE(h.close().ok());
  EXPECT_EQ(still_running(daemon), std::vector<pid_t>{}) << "the daemon outlived its job";
}

// A process of the job that writes its pid into the agent's own cgroup leaves cgroup.kill's
// reach; it carries the job's mark, and is killed with the job.
TEST_F(SecureAgentTest, AJobThatMovesIntoTheAgentsCgroupIsStillKilled) {
  const auto place = cgroup2_place();
  if (proc_control().mode != ProcControlMode::kCgroup2 || !place)
    GTEST_SKIP() << "jobs are not in cgroup v2 cgroups here (" << proc_control().reason << ")";
  const auto own = place->folder(place->own);
  ASSERT_TRUE(own);
  TempDir dir;
  const std::string pids = (dir.path() / "pids").string();
  auto stub = stub_for(start(with_script_target(AgentOptions{}, "sleep 30 & echo $! > " + *own +
                                                                    "/cgroup.procs; echo $! > " + pids)),
                       grpc::InsecureChannelCredentials());
  Hosted h(*stub, scripted_spec());
  ASSERT_NE(h.endpoint, "");
  const auto escaped = pids_in(pids);
  ASSERT_EQ(escaped.size(), 1u);
  std::ifstream cgroup("/proc/" + std::to_string(escaped[0]) + "/cgroup");
  std::string text((std::istreambuf_iterator<char>(cgroup)), {});
  EXPECT_THAT(text, HasSubstr("0::" + place->own + "\n")) << "the job's process did not leave its cgroup";
  EXPECT_TRUE(h.close().ok());
  EXPECT_EQ(still_running(escaped), std::vector<pid_t>{})
      << "a process that left the job's cgroup outlived it";
}

// The direct children of `pid` (of all its threads), living or zombie.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream f(task.path() / "children");
    for (pid_t p; f >> p;) out.push_back(p);
  }
  return out;
}

// The zombies among the children of `agent`, once it has had up to 10 s to reap them: a
// zombie it adopted is reaped at its SIGCHLD, and one it never reaps is still there then.
std::vector<pid_t> zombies_left(pid_t agent) {
  std::vector<pid_t> z;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;;) {
    z.clear();
    for (pid_t p : children_of(agent)) {
      std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
      std::string line((std::istreambuf_iterator<char>(stat)), {});
      auto close_paren = line.rfind(')');
      if (close_paren != std::string::npos && line.size() > close_paren + 2 && line[close_paren + 2] == 'Z')
        z.push_back(p);
    }
    if (z.empty() || std::chrono::steady_clock::now() > deadline) return z;
    std::this_thread::sleep_for(10ms);
  }
}

// True once none of `pids` runs (each gone or a zombie), false if one still does after 10 s.
bool all_finished(const std::vector<pid_t>& pids) {
  for (auto deadline = std::chrono::steady_clock::now() + 10s;;) {
    bool running = false;
    for (pid_t p : pids) running = running || loadlab::testing::process_running(p);
    if (!running) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

// A FIFO's read end, open without waiting for a writer; closed with it.
struct FifoReader {
  explicit FifoReader(const std::string& path)
      : fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {}
  ~FifoReader() {
    if (fd >= 0) ::close(fd);
  }
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;
  const int fd;
};

// True once every writer of the FIFO open for reading as `fd` has closed it (end of file),
// false after 10 s. Writers must have opened it before: a FIFO nobody opened reads as ended.
bool writers_gone(int fd) {
  char buf[64];
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0 && ::read(fd, buf, sizeof buf) == 0) return true;
  }
  return false;
}

// A catalog with one target, "doubler": a shell that leaves three orphans (sleeps of 0.1 to
// 0.3 s, their parents gone at once) and execs loadlab-target. Each orphan holds `fifo` open
// for writing until it exits (the shell lets go of it before the exec): the test's sign that
// they have all exited.
std::string doubler_catalog(const TempDir& dir, const std::string& fifo) {
  const std::string script = "exec 3>'" + fifo +
                             "'; (sleep 0.2 &); (sleep 0.3 &); (sh -c 'sleep 0.1 &' &); exec 3>&-; exec " +
                             bin("loadlab-target") + " --listen {host}:{port} --threads 1";
  return dir.file("catalog.json", nlohmann::json{{"targets",
                                                  {{"doubler",
                                                    {{"argv", {"/bin/sh", "-c", script}},
                                                     {"readiness", {{"type", "http"}, {"path", "/"}}}}}}}}
                                      .dump());
}

// The agent adopts orphans (a child subreaper; PID 1 in a container) and reaps them: a
// target whose children double-fork leaves no zombie under the agent, as a daemon and as
// PID 1 of a PID namespace (`unshare --pid --fork`, as a container runs it). Every wait is for
// a state (the orphans' end, the job's end), then up to 10 s for the agent to reap.
TEST(Zombies, NoZombieIsLeftUnderTheAgentAsASubreaperOrAsPid1) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a PID namespace (CI is root)";
  TempDir dir;
  const std::string fifo = (dir.path() / "orphans").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const auto catalog = doubler_catalog(dir, fifo);
  for (bool pid1 : {false, true}) {
    std::vector<std::string> prefix;
    if (pid1) prefix = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc"};
    AgentProcess agent("z", "127.0.0.1:0", {"--catalog", catalog}, prefix);
    ASSERT_NE(agent.address, "") << agent.proc->output_tail();
    pid_t agent_pid = agent.proc->pid();
    if (pid1) {  // unshare's child is the agent
      std::ifstream f("/proc/" + std::to_string(agent_pid) + "/task/" + std::to_string(agent_pid) +
                      "/children");
      f >> agent_pid;
    }
    FifoReader orphans(fifo);  // before the job opens it for writing, which waits for a reader
    ASSERT_GE(orphans.fd, 0) << std::strerror(errno);
    auto stub = stub_for(agent.address, grpc::InsecureChannelCredentials());
    v1::TargetSpec spec;
    spec.set_catalog("doubler");
    Hosted h(*stub, spec);
    ASSERT_NE(h.endpoint, "") << agent.proc->output_tail();
    EXPECT_TRUE(writers_gone(orphans.fd)) << "the orphans still run after 10 s";
    EXPECT_EQ(zombies_left(agent_pid), std::vector<pid_t>{}) << (pid1 ? "as PID 1" : "as a subreaper");
    const auto job = children_of(agent_pid);  // the target, whose orphans come to the agent when it ends
    EXPECT_TRUE(h.close().ok());
    EXPECT_TRUE(all_finished(job)) << "the job's processes still run 10 s after it closed";
    EXPECT_EQ(zombies_left(agent_pid), std::vector<pid_t>{}) << (pid1 ? "as PID 1" : "as a subreaper");
  }
}

// Item 5: a token or key another user could read is refused (or, with the flag, warned),
// and so is a token too short to guess at.
TEST(Credentials, AWorldReadableOrShortTokenIsRefused) {
  TempDir dir;
  const auto readable = dir.file("readable", "0123456789abcdef0123\n");
  std::filesystem::permissions(readable, std::filesystem::perms(0644));
  auto r = run_command({bin("loadlab-agent"), "--token-file", readable}, 10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("--token-file: \"" + readable +
                                       "\" can be read by every user (mode 0644): chmod 600 it"));
  const auto short_token = dir.secret("short", "fifteen-chars-x\n");
  r = run_command({bin("loadlab-agent"), "--token-file", short_token}, 10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("a token of 15 characters; at least 16 are needed"));
  TempDir pki_dir;
  Pki pki(pki_dir);
  std::filesystem::permissions(pki.path("agent.key"), std::filesystem::perms(0644));
  r = run_command({bin("loadlab-agent"), "--tls-cert", pki.path("agent.pem"), "--tls-key",
                   pki.path("agent.key"), "--tls-client-ca", pki.path("ca.pem")},
                  10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("--tls-key: "));
  // Allowed by the flag, with a warning.
  AgentProcess agent("t", "127.0.0.1:0", {"--token-file", readable, "--allow-readable-credentials"});
  EXPECT_NE(agent.address, "");
  kill(agent.proc->pid(), SIGTERM);
  agent.proc->wait_exit(5s);
  agent.proc->wait_output_end(2s);
  EXPECT_THAT(agent.proc->output_tail(), HasSubstr("used because of --allow-readable-credentials"));
}

// Item 5: jobs run as the agent's user can read its credentials; with --job-user they run as
// another user, who cannot. A catalog target (a shell, then loadlab-target) notes its uid and
// whether it could read the token; a load with a body (a file the agent gives the job's user)
// is answered whole. The binaries are copied into a folder every user can reach, as an
// installed agent's are.
TEST(Credentials, JobsRunAsTheJobUserCannotReadTheAgentsToken) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run jobs as another user (CI is root)";
  TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  const auto bin_dir = dir.path() / "bin";
  const auto out = dir.path() / "out";
  std::filesystem::create_directories(bin_dir);
  std::filesystem::create_directories(out);
  std::filesystem::permissions(out, std::filesystem::perms(0777));
  for (const char* b : {"loadlab-target", "loadlab-load"}) std::filesystem::copy_file(bin(b), bin_dir / b);
  const std::string token = "job-user-token-0123456789";
  const auto token_file = dir.secret("token", token + "\n");
  const auto catalog =
      dir.file("catalog.json",
               nlohmann::json{
                   {"targets",
                    {{"probe",
                      {{"argv",
                        {"/bin/sh", "-c",
                         "id -un > " + (out / "user").string() + "; (cat " + token_file +
                             " || echo refused) > " + (out / "read").string() + " 2>/dev/null; exec " +
                             (bin_dir / "loadlab-target").string() + " --listen {host}:{port} --threads 1"}},
                       {"readiness", {{"type", "http"}, {"path", "/"}}}}}}}}
                   .dump());
  auto read = [&](const char* name) {
    std::ifstream f(out / name);
    std::string line;
    std::getline(f, line);
    return line;
  };
  for (bool job_user : {false, true}) {
    for (const char* name : {"user", "read"}) std::filesystem::remove(out / name);
    std::vector<std::string> args = {"--token-file", token_file,  "--catalog",
                                     catalog,        "--bin-dir", bin_dir.string()};
    if (job_user) args.insert(args.end(), {"--job-user", "nobody"});
    AgentProcess agent("u", "127.0.0.1:0", args);
    ASSERT_NE(agent.address, "") << agent.proc->output_tail();
    auto stub = stub_for(agent.address, grpc::InsecureChannelCredentials());
    v1::TargetSpec spec;
    spec.set_catalog("probe");
    Hosted h(*stub, spec, token);
    ASSERT_NE(h.endpoint, "") << agent.proc->output_tail();
    EXPECT_EQ(read("user"), job_user ? "nobody" : "root");
    EXPECT_EQ(read("read"), job_user ? "refused" : token) << "the job read the agent's token";
    auto load = load_to(h.endpoint, 5);
    load.set_method("POST");
    load.set_body("a body in a file of the job's user");
    auto r = run_load(*stub, load, token);
    EXPECT_TRUE(r.status.ok()) << r.status.error_message() << agent.proc->output_tail();
    EXPECT_EQ(r.requests, 5u);
    EXPECT_TRUE(h.close().ok());
  }
  // An agent that could not run the jobs as the user says so at start.
  auto r = run_command({bin("loadlab-agent"), "--job-user", "no-such-user-of-loadlab"}, 10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail,
              HasSubstr("--job-user: \"no-such-user-of-loadlab\" is not a user of this machine"));
  r = run_command({bin("loadlab-agent"), "--job-user", "root"}, 10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("is root"));
}

// Item 6: a body over 128 KiB (one argument of execve at most) reaches the server whole: the
// agent hands it to the worker in a file.
TEST_F(SecureAgentTest, ABodyOver128KiBIsSentWhole) {
  auto target = ChildProcess::spawn({bin("loadlab-target"), "--listen", "127.0.0.1:0", "--threads", "1"});
  std::string line;
  ASSERT_EQ(target->next_line(line, 10s), ChildProcess::LineStatus::kLine);
  const std::string endpoint = line.substr(13);
  auto stub = stub_for(start(AgentOptions{}), grpc::InsecureChannelCredentials());
  auto spec = load_to(endpoint, 5);
  spec.set_method("POST");
  spec.set_body(std::string(300 * 1024, 'b'));
  auto r = run_load(*stub, spec);
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.requests, 5u);
  EXPECT_EQ(served(endpoint), 5);
}

}  // namespace
}  // namespace loadlab::agent
