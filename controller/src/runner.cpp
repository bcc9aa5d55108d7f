#include "loadlab/controller/runner.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/controller/cell_runner.hpp"
#include "loadlab/controller/lab.hpp"
#include "loadlab/controller/reporters.hpp"
#include "loadlab/controller/scenario.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

namespace {

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address) {
  grpc::ChannelArguments args;
  // Notice a vanished agent (killed, cable cut) instead of waiting forever.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

struct ConnectedAgent {
  std::string role;
  std::string name;
  std::string address;
  std::unique_ptr<v1::Agent::Stub> stub;
  v1::AgentInfo info;
};

ConnectedAgent connect(const std::string& role, const std::string& name, const std::string& address) {
  ConnectedAgent a{role, name, address, v1::Agent::NewStub(make_channel(address)), {}};
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  ctx.set_wait_for_ready(true);
  auto st = a.stub->Describe(&ctx, v1::DescribeRequest(), &a.info);
  if (!st.ok()) throw EnvironmentError("cannot reach agent " + name + " at " + address + ": " + st.error_message());
  return a;
}

nlohmann::json agent_json(const ConnectedAgent& a) {
  std::string info;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(a.info, &info, opts);
  return {{"role", a.role}, {"name", a.name}, {"address", a.address}, {"describe", nlohmann::json::parse(info)}};
}

// Every target must be one the target agent can host.
void check_targets(const Scenario& s, const ConnectedAgent& target_agent) {
  const auto& known = target_agent.info.catalog();
  for (size_t i = 0; i < s.targets.size(); ++i) {
    const auto& t = s.targets[i];
    const std::string& name = t.builtin.empty() ? t.catalog : t.builtin;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw InputError("/targets/" + std::to_string(i) + (t.builtin.empty() ? "/catalog" : "/builtin"),
                     "agent " + target_agent.name + " cannot host \"" + name + "\"; it knows: " + list);
  }
}

void write_file(const fs::path& path, const std::string& content) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out.flush()) throw EnvironmentError("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);  // readers never see half a file
}

}  // namespace

int run_scenario(const RunOptions& options, std::ostream& table_out) {
  auto log = component_logger("controller");
  Scenario scenario = load_scenario_file(options.scenario_path);
  auto cells = expand(scenario);

  fs::path out = options.out_dir.empty() ? fs::path("runs") / (scenario.name + "-" + utc_now("%Y%m%dT%H%M%SZ"))
                                         : fs::path(options.out_dir);
  if (fs::exists(out / "result.json"))
    throw InputError("", "--out: " + out.string() + " already holds a result.json; choose another folder");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw InputError("", "--out: cannot create " + out.string() + ": " + ec.message());

  // Agents: from the lab, or one embedded agent reached over the same gRPC path.
  std::unique_ptr<agent::AgentServer> embedded;
  ConnectedAgent target_agent, load_agent;
  if (options.lab_path.empty()) {
    agent::AgentOptions ao;
    ao.name = "embedded";
    ao.bin_dir = options.bin_dir;
    embedded = std::make_unique<agent::AgentServer>(ao);
    std::string address = embedded->start("127.0.0.1:0");
    log->info("embedded agent on {}", address);
    target_agent = connect("target", "embedded", address);
    load_agent = connect("load", "embedded", address);
  } else {
    Lab lab = load_lab_file(options.lab_path);
    const auto& t = lab.first_with_role("target");
    const auto& l = lab.first_with_role("load");
    target_agent = connect("target", t.name, t.address);
    load_agent = connect("load", l.name, l.address);
  }
  check_targets(scenario, target_agent);

  nlohmann::json result = {{"loadlab_version", LOADLAB_VERSION},
                           {"scenario_path", options.scenario_path},
                           {"scenario", scenario.source},
                           {"started_at", utc_now("%Y-%m-%dT%H:%M:%SZ")},
                           {"agents", {agent_json(target_agent), agent_json(load_agent)}},
                           {"cells", nlohmann::json::array()}};
  std::vector<CellResult> results;
  auto save = [&] {
    result["cells"] = nlohmann::json::array();
    for (auto& r : results) result["cells"].push_back(to_json(r));
    write_file(out / "result.json", result.dump(2) + "\n");
    std::ostringstream csv, md;
    write_csv(csv, results);
    write_markdown(md, scenario.name, results);
    write_file(out / "matrix.csv", csv.str());
    write_file(out / "matrix.md", md.str());
  };

  size_t failed = 0;
  for (const auto& cell : cells) {
    CellResult cr{cell, {}, {}};
    for (uint32_t rep = 0; rep < scenario.repetitions; ++rep) {
      try {
        cr.reps.push_back(run_repetition(*target_agent.stub, *load_agent.stub, scenario, cell, nullptr));
        if (!options.quiet)
          log->info("[{}/{}] {} rep {}/{}: {:.0f} qps, p99 {:.2f} ms", cell.index + 1, cells.size(), cell.key(),
                    rep + 1, scenario.repetitions, cr.reps.back().qps, cr.reps.back().latency_us.p99 / 1000.0);
      } catch (const CellError& e) {
        cr.error = e.what();
        log->error("[{}/{}] {} rep {}/{} failed: {}", cell.index + 1, cells.size(), cell.key(), rep + 1,
                   scenario.repetitions, e.what());
        break;
      }
    }
    if (!cr.ok()) ++failed;
    results.push_back(std::move(cr));
    save();  // after every cell: a broken run keeps what it measured
  }
  result["finished_at"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
  save();
  if (embedded) embedded->shutdown(1000);

  table_out << "\n" << scenario.name << " (" << cells.size() << " cells, " << scenario.repetitions
            << " repetition" << (scenario.repetitions == 1 ? "" : "s") << " each)\n\n";
  write_table(table_out, results);
  table_out << "\nresults: " << (out / "result.json").string() << ", matrix.csv, matrix.md\n";
  if (failed) table_out << failed << " of " << cells.size() << " cells failed\n";
  return failed ? 3 : 0;
}

}  // namespace loadlab::controller
