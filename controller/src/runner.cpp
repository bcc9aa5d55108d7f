#include "loadlab/controller/runner.hpp"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include "loadlab/controller/embedded_agent.hpp"
#include "loadlab/controller/flags.hpp"
#include "loadlab/controller/lab.hpp"
#include "loadlab/controller/placement.hpp"
#include "loadlab/controller/progress.hpp"
#include "loadlab/controller/provenance.hpp"
#include "loadlab/controller/repetition_runner.hpp"
#include "loadlab/controller/reporters.hpp"
#include "loadlab/controller/retry.hpp"
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
  // Notice a vanished agent (killed, cable cut) within seconds instead of waiting forever.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

struct ConnectedAgent {
  AgentDef def;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Agent::Stub> stub;
  v1::AgentInfo info;
  std::string error;  // why it is unusable; "" when it answered
  AgentRef ref() const { return {def.name, stub.get(), info.cores()}; }
  bool can_host(const std::string& name) const {
    return std::find(info.catalog().begin(), info.catalog().end(), name) != info.catalog().end();
  }
  // True when the agent answers Describe within `deadline`. The channel's reconnect
  // backoff (1 s, growing to minutes) is reset first: an agent restarted on the same port
  // is seen at the next probe, and a probe of a refused port fails at once.
  bool answers(std::chrono::milliseconds deadline) const {
    grpc::experimental::ChannelResetConnectionBackoff(channel.get());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::AgentInfo ignored;
    return stub->Describe(&ctx, v1::DescribeRequest(), &ignored).ok();
  }
};

std::unique_ptr<ConnectedAgent> connect(const AgentDef& def, double timeout_s) {
  auto a = std::make_unique<ConnectedAgent>();
  a->def = def;
  a->channel = make_channel(def.address);
  a->stub = v1::Agent::NewStub(a->channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int>(timeout_s * 1000)));
  ctx.set_wait_for_ready(true);
  auto st = a->stub->Describe(&ctx, v1::DescribeRequest(), &a->info);
  if (!st.ok())
    a->error = "cannot reach agent " + def.name + " at " + def.address + ": " + st.error_message();
  return a;
}

nlohmann::json describe_json(const v1::AgentInfo& info) {
  std::string text;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(info, &text, opts);
  return nlohmann::json::parse(text);
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

// journal.jsonl: one line per finished cell, flushed to the disk before the next cell.
class Journal {
 public:
  explicit Journal(const fs::path& path) {
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw EnvironmentError("cannot open " + path.string());
  }
  ~Journal() { close(fd_); }
  void append(const nlohmann::json& j) {
    std::string line = j.dump() + "\n";
    if (write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()) || fsync(fd_) != 0)
      throw EnvironmentError("cannot write the journal");
  }
  // Cells already finished, by key; a torn last line (killed mid-write) is ignored.
  static std::map<std::string, nlohmann::json> read(const fs::path& path) {
    std::map<std::string, nlohmann::json> done;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("key")) done[j["key"].get<std::string>()] = j;
    }
    return done;
  }

 private:
  int fd_ = -1;
};

std::string cell_summary(const CellResult& c) {
  if (!c.ok()) return "FAILED: " + c.error;
  const auto& m = c.median();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.0f req/s, p50 %.2f ms, p99 %.2f ms, %llu errors", m.qps,
                m.latency_us.p50 / 1000, m.latency_us.p99 / 1000, static_cast<unsigned long long>(m.errors));
  std::string s = buf;
  for (auto& f : c.flags()) s += " [" + f + "]";
  return s;
}

// The lab's agents and the choice of agents for each attempt.
class AgentPool {
 public:
  std::vector<std::unique_ptr<ConnectedAgent>> agents;

  // Eligible target agents for `target`, then load agents; rotated by `attempt` so a
  // retry goes to another agent when the lab has one.
  Placement place(const Scenario& s, const TargetDef& t, uint32_t attempt) const {
    const std::string& name = t.builtin.empty() ? t.catalog : t.builtin;
    std::vector<const ConnectedAgent*> targets, loads;
    for (auto& a : agents) {
      if (!a->error.empty()) continue;
      if (a->def.matches(s.placement.target_role, s.placement.target_labels) && a->can_host(name))
        targets.push_back(a.get());
      if (a->def.matches(s.placement.load_role, s.placement.load_labels)) loads.push_back(a.get());
    }
    const bool share = s.placement.share_agents || agents.size() == 1;
    auto eligible_loads = [&](const ConnectedAgent* target) {
      std::vector<const ConnectedAgent*> eligible;
      for (auto* l : loads)
        if (share || l != target) eligible.push_back(l);
      return eligible;
    };
    // Only target agents that leave at least one load agent can take the cell.
    std::vector<const ConnectedAgent*> usable;
    for (auto* t : targets)
      if (!eligible_loads(t).empty()) usable.push_back(t);
    if (targets.empty())
      throw EnvironmentError("no reachable agent with role " + s.placement.target_role + " can host \"" +
                             name + "\"");
    if (usable.empty())
      throw EnvironmentError("no reachable agent with role " + s.placement.load_role +
                             " other than the target's " + targets[0]->def.name +
                             " (set placement.share_agents to allow sharing)");
    Placement p;
    const ConnectedAgent* target = usable[attempt % usable.size()];
    p.target = target->ref();
    auto eligible = eligible_loads(target);
    size_t n = std::min<size_t>(s.placement.load_agents, eligible.size());
    for (size_t i = 0; i < n; ++i) p.loads.push_back(eligible[(attempt + i) % eligible.size()]->ref());
    return p;
  }

  // True when every agent of `p` answers, each within `deadline`.
  bool answer(const Placement& p, std::chrono::milliseconds deadline) const {
    auto answers = [&](const AgentRef& ref) {
      for (auto& a : agents)
        if (a->stub.get() == ref.stub) return a->answers(deadline);
      return false;
    };
    return answers(p.target) && std::all_of(p.loads.begin(), p.loads.end(), answers);
  }

  std::map<std::string, uint32_t> cores() const {
    std::map<std::string, uint32_t> out;
    for (auto& a : agents) out[a->def.name] = a->info.cores();
    return out;
  }
};

// What every cell of a run shares.
struct CellRun {
  const Scenario& scenario;
  const AgentPool& pool;
  const PhaseLimits& limits;
  const std::map<std::string, uint32_t>& cores;
  ProgressReporter& progress;
  const std::atomic<int>* stop;
};

// Every repetition of one cell, each with its retries; nullopt when the run is stopping.
std::optional<CellResult> run_cell(const CellRun& run, const Cell& cell, size_t finished) {
  const Scenario& s = run.scenario;
  const TargetDef& target = s.targets[cell.target_index];
  RetryOptions retry;
  retry.retries = s.execution.retries;
  // Steps double up to 30 s, or up to the base itself when a scenario asks for longer.
  retry.backoff = {s.execution.retry_backoff_s, std::max(30.0, s.execution.retry_backoff_s)};
  retry.stop = run.stop;
  RepetitionOptions options;
  options.limits = run.limits;
  options.progress = [&](const LiveProgress& p) { run.progress.live(p); };
  options.stop = run.stop;
  auto attempt = [&](uint32_t n) { return run_repetition(run.pool.place(s, target, n), s, cell, options); };
  // The agents the next attempt will use, with its rotation, must answer again.
  auto ready = [&](uint32_t n, std::chrono::milliseconds deadline) {
    return run.pool.answer(run.pool.place(s, target, n), deadline);
  };
  auto note = [&](const std::string& line) { run.progress.note(cell.key() + " " + line); };
  CellResult cr;
  cr.cell = cell;
  for (uint32_t rep = 0; rep < s.repetitions; ++rep) {
    run.progress.cell_started(finished, cell.key(), rep, s.repetitions);
    auto outcome = run_with_retries(retry, attempt, ready, note);
    if (outcome.stopped) return std::nullopt;
    if (!outcome.rep) {
      cr.error = outcome.error;
      break;
    }
    outcome.rep->flags = saturation_flags(*outcome.rep, run.cores);
    cr.reps.push_back(std::move(*outcome.rep));
  }
  return cr;
}

}  // namespace

int run_scenario(const RunOptions& options, std::ostream& table_out) {
  auto log = component_logger("controller");
  const bool resuming = !options.resume_dir.empty();
  fs::path out;
  std::string scenario_path = options.scenario_path;
  nlohmann::json previous;  // result.json of the run being resumed
  if (resuming) {
    out = options.resume_dir;
    if (!fs::exists(out / "scenario.json"))
      throw InputError("", "--resume: " + out.string() + " holds no scenario.json; is it a run folder?");
    if (fs::exists(out / "result.json")) previous = read_json_file((out / "result.json").string());
    scenario_path = (out / "scenario.json").string();
  }
  Scenario scenario = load_scenario_file(scenario_path);
  auto cells = expand(scenario);
  if (!resuming) {
    out = options.out_dir.empty() ? fs::path("runs") / (scenario.name + "-" + utc_now("%Y%m%dT%H%M%SZ"))
                                  : fs::path(options.out_dir);
    if (fs::exists(out / "result.json") || fs::exists(out / "journal.jsonl"))
      throw InputError(
          "", "--out: " + out.string() + " already holds a run; choose another folder or --resume it");
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw EnvironmentError("--out: cannot create " + out.string() + ": " + ec.message());
    fs::copy_file(scenario_path, out / "scenario.json", fs::copy_options::overwrite_existing, ec);
    if (ec) throw EnvironmentError("cannot copy the scenario into " + out.string() + ": " + ec.message());
  }
  std::string lab_path = options.lab_path;
  if (resuming && lab_path.empty() && previous.contains("lab_path"))
    lab_path = previous["lab_path"].get<std::string>();

  // Agents: from the lab, or one embedded agent reached over the same gRPC path.
  std::unique_ptr<EmbeddedAgent> embedded;
  AgentPool pool;
  if (lab_path.empty()) {
    if (!options.embedded_agent) throw EnvironmentError("no --lab given, and this program embeds no agent");
    embedded = options.embedded_agent(options.bin_dir);
    log->debug("embedded agent on {}", embedded->address());
    pool.agents.push_back(connect({"embedded", embedded->address(), {"target", "load"}, {}}, 10));
  } else {
    Lab lab;
    try {
      lab = load_lab_file(lab_path);
    } catch (const InputError& e) {
      throw e.in_file(lab_path);
    }
    for (auto& def : lab.agents) {
      pool.agents.push_back(connect(def, 10));
      if (!pool.agents.back()->error.empty()) log->warn("{}", pool.agents.back()->error);
    }
  }
  // Every target must be one some eligible agent can host, before anything runs.
  for (size_t i = 0; i < scenario.targets.size(); ++i) {
    const auto& t = scenario.targets[i];
    const std::string& name = t.builtin.empty() ? t.catalog : t.builtin;
    bool hostable = false, reachable = false;
    for (auto& a : pool.agents) {
      if (!a->error.empty() ||
          !a->def.matches(scenario.placement.target_role, scenario.placement.target_labels))
        continue;
      reachable = true;
      hostable = hostable || a->can_host(name);
    }
    if (!reachable) {
      std::string why;
      for (auto& a : pool.agents) why += a->error.empty() ? "" : "; " + a->error;
      throw EnvironmentError("no reachable agent with role " + scenario.placement.target_role + why);
    }
    if (!hostable) {
      std::string list;
      for (auto& a : pool.agents)
        for (auto& k : a->info.catalog()) list += (list.empty() ? "" : ", ") + a->def.name + ":" + k;
      throw InputError("/targets/" + std::to_string(i) + (t.builtin.empty() ? "/catalog" : "/builtin"),
                       "no agent can host \"" + name + "\"; known: " + list);
    }
  }
  for (auto& t : scenario.targets) pool.place(scenario, t, 0);  // fails now, not mid-run, if impossible

  nlohmann::json agents_json = nlohmann::json::array();
  for (auto& a : pool.agents)
    agents_json.push_back({{"name", a->def.name},
                           {"address", a->def.address},
                           {"roles", a->def.roles},
                           {"describe", a->error.empty() ? describe_json(a->info) : nlohmann::json(nullptr)},
                           {"error", a->error}});
  nlohmann::json result = previous.is_object() ? previous : nlohmann::json::object();
  if (!resuming || !result.contains("started_at")) {
    result["loadlab_version"] = LOADLAB_VERSION;
    result["scenario_path"] = options.scenario_path;
    result["scenario_file"] = file_provenance(options.scenario_path);
    result["scenario"] = scenario.source;
    result["lab_path"] = lab_path;
    result["started_at"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
  }
  result["agents"] = agents_json;
  if (resuming) result["resumed_at"].push_back(utc_now("%Y-%m-%dT%H:%M:%SZ"));

  // Cells finished before a resume are kept as they were.
  auto done = Journal::read(out / "journal.jsonl");
  Journal journal(out / "journal.jsonl");
  std::vector<CellResult> results(cells.size());
  std::vector<bool> have(cells.size(), false);
  for (size_t i = 0; i < cells.size(); ++i) {
    auto it = done.find(cells[i].key());
    if (it == done.end()) continue;
    results[i] = cell_from_json(it->second["cell"], cells[i]);
    have[i] = true;
  }
  auto save = [&] {
    std::vector<CellResult> finished;
    result["cells"] = nlohmann::json::array();
    for (size_t i = 0; i < cells.size(); ++i)
      if (have[i]) {
        result["cells"].push_back(to_json(results[i]));
        finished.push_back(results[i]);
      }
    write_file(out / "result.json", result.dump(2) + "\n");
    std::ostringstream csv, md;
    write_csv(csv, finished);
    write_markdown(md, scenario.name, finished);
    write_file(out / "matrix.csv", csv.str());
    write_file(out / "matrix.md", md.str());
  };
  save();

  std::vector<size_t> order(cells.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (scenario.execution.shuffle_seed)
    std::shuffle(order.begin(), order.end(), std::mt19937_64(*scenario.execution.shuffle_seed));

  const auto cores = pool.cores();
  const PhaseLimits limits{scenario.execution.ready_s, scenario.execution.warmup_extra_s,
                           scenario.execution.measure_s, scenario.execution.stop_s};
  ProgressReporter progress(cells.size(), ProgressReporter::stderr_is_tty(), options.quiet);
  size_t finished = static_cast<size_t>(std::count(have.begin(), have.end(), true));
  bool first_cell = true;
  for (size_t idx : order) {
    if (have[idx]) continue;
    const Cell& cell = cells[idx];
    if (!first_cell && wait_until_ready(nullptr, scenario.execution.cooldown_s, options.stop,
                                        WaitClock::real()) == WaitOutcome::kStopped)
      break;
    first_cell = false;
    auto cr = run_cell(CellRun{scenario, pool, limits, cores, progress, options.stop}, cell, finished);
    if (!cr) break;  // shutting down: the cell is left to --resume, not recorded as failed
    results[idx] = std::move(*cr);
    have[idx] = true;
    journal.append({{"key", cell.key()}, {"cell", to_json(results[idx])}});
    ++finished;
    progress.cell_finished(finished, cell.key(), cell_summary(results[idx]));
    save();  // after every cell: a broken run keeps what it measured
  }
  // A signal after the last cell changes nothing: the run is complete.
  const bool complete = std::all_of(have.begin(), have.end(), [](bool h) { return h; });
  const int stopped_by = complete || !options.stop ? 0 : options.stop->load();
  if (complete) result["finished_at"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
  save();
  progress.finish();
  if (embedded) embedded->shutdown();

  std::vector<CellResult> shown;
  for (size_t i = 0; i < cells.size(); ++i)
    if (have[i]) shown.push_back(results[i]);
  size_t failed =
      static_cast<size_t>(std::count_if(shown.begin(), shown.end(), [](auto& c) { return !c.ok(); }));
  table_out << "\n"
            << scenario.name << " (" << cells.size() << " cells, " << scenario.repetitions << " repetition"
            << (scenario.repetitions == 1 ? "" : "s") << " each)\n\n";
  write_table(table_out, shown);
  table_out << "\nresults: " << (out / "result.json").string() << ", matrix.csv, matrix.md\n";
  if (failed) table_out << failed << " of " << cells.size() << " cells failed\n";
  if (stopped_by) {
    table_out << "interrupted by signal " << stopped_by << " after " << shown.size() << " of " << cells.size()
              << " cells; continue with: loadlab run --resume " << out.string() << "\n";
    return 128 + stopped_by;
  }
  return failed ? 3 : 0;
}

int describe_agents(const std::string& lab_path, std::ostream& out) {
  Lab lab = load_lab_file(lab_path);
  std::vector<std::vector<std::string>> rows{
      {"agent", "address", "roles", "version", "host", "cores", "memory", "busy", "catalog / error"}};
  bool all = true;
  for (auto& def : lab.agents) {
    auto a = connect(def, 5);
    std::string roles;
    for (auto& r : def.roles) roles += (roles.empty() ? "" : ",") + r;
    if (!a->error.empty()) {
      all = false;
      rows.push_back({def.name, def.address, roles, "-", "-", "-", "-", "-", "UNREACHABLE: " + a->error});
      continue;
    }
    std::string catalog;
    for (auto& c : a->info.catalog()) catalog += (catalog.empty() ? "" : ", ") + c;
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB",
                  static_cast<double>(a->info.memory_bytes()) / (1024.0 * 1024 * 1024));
    rows.push_back({def.name, def.address, roles, a->info.version(), a->info.hostname(),
                    std::to_string(a->info.cores()), mem, a->info.busy() ? "yes" : "no", catalog});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (auto& r : rows)
    for (size_t i = 0; i + 1 < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << r[i];
      if (i + 1 < r.size()) out << std::string(width[i] - r[i].size() + 2, ' ');
    }
    out << "\n";
  }
  return all ? 0 : 1;
}

}  // namespace loadlab::controller
