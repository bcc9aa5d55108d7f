// loadlab: the controller CLI. Parses flags, runs, maps errors to exit statuses
// (loadlab/shared/exit_status.hpp): 0 ok, 1 a regression, 2 bad input, 3 some cells failed,
// 4 the lab could not be used, 128 + N a run stopped by signal N (SIGINT, SIGTERM).
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/bisect_cli.hpp"
#include "cli/history_cli.hpp"
#include "cli/report_cli.hpp"
#include "judge/compare.hpp"
#include "lab/describe_agents.hpp"
#include "loadlab/metrics/server.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/exit_status.hpp"
#include "loadlab/shared/flag_ranges.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/open_files.hpp"
#include "local_agent.hpp"
#include "report/ci_results.hpp"
#include "report/night_index.hpp"
#include "run/nightly_bisect.hpp"
#include "run/scenario_folder.hpp"
#include "run/scenario_run.hpp"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace {

// SIGINT/SIGTERM are taken by one thread with sigwait, as in the agent: no work in a
// signal handler. The first asks the run to stop (the cell in progress is cancelled, the
// finished ones are kept for --resume); a second ends the process at once. Called before
// any other thread starts, so that they all inherit the blocked mask.
void stop_on_signals(std::atomic<int>& stop) {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::thread([sigs, &stop] {
    int sig = 0;
    sigwait(&sigs, &sig);
    loadlab::component_logger("controller")
        ->warn("signal {}: stopping the run; finished cells are kept (a second signal ends it at once)", sig);
    stop = sig;
    sigwait(&sigs, &sig);
    std::_Exit(128 + sig);
  }).detach();
}

constexpr const char* kIncludeRootHelp =
    "DIR: the folder a scenario's includes must resolve inside (symlinks followed); default the "
    "scenario file's folder, or the folder of scenarios";

// The command line: the subcommands and the flags CLI11 fills in.
struct CommandLine {
  CLI::App app{"loadlab: runs HTTP benchmark matrices on a lab of agents"};
  std::string log_level = "info";
  loadlab::controller::RunOptions run;
  std::string agents_lab, agents_lab_credentials;
  std::string compare_base, compare_new, compare_metric, compare_report;
  double compare_threshold = 0;
  uint32_t baseline_nights = 0;
  std::string ab;
  bool bisect_regressions = false;  // run --bisect
  bool profile_every_cell = false;  // run --profile
  std::string validate_path;
  std::vector<std::string> validate_overrides;
  std::string validate_include_root;
  std::string report_dir, report_index;
  std::string junit, summary_md;  // --junit FILE, --summary-md FILE (run and compare)
  std::string metrics_listen;
  loadlab::metrics::ServerTls metrics_tls;
  bool metrics_insecure = false;
  CLI::App *run_cmd, *agents_cmd, *compare_cmd, *validate_cmd, *report_cmd;
  CLI::Option* threshold_opt;
  loadlab::controller::HistoryCommand history;
  loadlab::controller::BisectCommand bisect;

  CommandLine() {
    app.require_subcommand(1);
    app.fallthrough();  // --log-level after the subcommand too (loadlab run S --log-level warn)
    app.set_version_flag("--version", loadlab::version_line("loadlab"));
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");

    add_run_command();
    add_agents_command();
    add_compare_command();
    add_validate_command();
    history.add_to(app);
    bisect.add_to(app);
    add_report_command();
  }
  CommandLine(const CommandLine&) = delete;

  // Before anything is measured: the folders the CI files go to exist.
  void check_ci_paths() const {
    for (auto [flag, path] : {std::pair{"--junit", &junit}, std::pair{"--summary-md", &summary_md},
                              std::pair{"--report", &compare_report}}) {
      if (path->empty()) continue;
      const auto parent = std::filesystem::absolute(*path).parent_path();
      if (!std::filesystem::is_directory(parent))
        throw loadlab::InputError(flag, "the folder " + parent.string() + " does not exist");
      if (std::filesystem::is_directory(*path))
        throw loadlab::InputError(flag, *path + " is a folder, not a file");
    }
  }  // the subcommand pointers point into `app`

  // The file a bad input came from, for the error line.
  std::string input_name(const loadlab::InputError& e) const {
    std::string source = *validate_cmd     ? validate_path
                         : *report_cmd     ? report_index
                         : *agents_cmd     ? agents_lab
                         : *compare_cmd    ? "compare"
                         : bisect.chosen() ? "bisect"
                                           : run.scenario_path;
    if (!e.file().empty()) source = e.file();
    return source.empty() ? run.resume_dir : source;
  }

 private:
  // `loadlab run` and its flags.
  void add_run_command() {
    run_cmd = app.add_subcommand("run", "run a scenario and write its result matrix");
    run_cmd->add_option("scenario", run.scenario_path,
                        "scenario JSON file, or a folder: each of its *.json scenarios in turn, into "
                        "OUT/NAME with --out OUT; exit status the worst of them");
    run_cmd->add_option("--set", run.overrides,
                        "PATH=VALUE: set a scenario value before the run, e.g. load.total_requests=5000000 "
                        "(dotted path; VALUE is JSON, or else a string); repeatable");
    run_cmd->add_option("--include-root", run.include_root, kIncludeRootHelp)->check(CLI::ExistingDirectory);
    run_cmd->add_option(
        "--baseline", run.baseline,
        "judge the finished run: history (each cell against its earlier nights in --history; "
        "history:last-good is the same), or a run folder or result.json (two runs); exit 1 on a regression");
    run_cmd
        ->add_option("--baseline-nights", baseline_nights,
                     "with --baseline history: the most recent earlier nights that make a cell's band "
                     "(default the scenario's regression.baseline_nights, or 10)")
        ->check(loadlab::number_in(2, static_cast<double>(loadlab::limits::kMaxBaselineNights)));
    run_cmd->add_option("--ab", ab,
                        "A,B: two targets of the scenario run interleaved (A B, B A, ...) cell by cell, B "
                        "judged against A pair by pair; the same as --set ab={\"a\":A,\"b\":B}");
    run_cmd->add_flag("--profile", profile_every_cell,
                      "sample every cell's server and load workers with perf over each window "
                      "(docs/profiles.md); the same as --set profile.cells=null");
    run_cmd->add_flag(
        "--bisect", bisect_regressions,
        "with --baseline history: bisect each regressed cell whose target is built from a commit, "
        "from the last night's other commit to tonight's (into RUN/bisect/KEY)");
    run_cmd->add_option("--history", run.history,
                        "append the finished run to this SQLite history file (created if new)");
    run_cmd->add_option("--resume", run.resume_dir,
                        "continue the run in this folder, keeping its finished cells");
    run_cmd->add_option("--lab", run.lab_path, "lab JSON file (default: an embedded local agent)");
    run_cmd->add_option("--lab-credentials", run.lab_credentials_path,
                        "JSON file of the lab's tls and token_file, for a --lab file that names agents only "
                        "(one kept in the scenario repository may name no credentials)");
    run_cmd->add_option("--out", run.out_dir,
                        "run folder (default runs/NAME-TIME); for a folder of scenarios, the folder of "
                        "their run folders");
    run_cmd->add_option("--bin-dir", run.bin_dir,
                        "folder of loadlab-target and loadlab-load for the embedded agent");
    run_cmd->add_flag("--quiet", run.quiet,
                      "no progress bar, plain log lines (--log-level warn silences them)");
    add_metrics_flags(run_cmd);
    add_ci_flags(run_cmd);
  }

  // --metrics-listen and its TLS, for run.
  void add_metrics_flags(CLI::App* cmd) {
    cmd->add_option("--metrics-listen", metrics_listen,
                    "HOST:PORT to serve the run's progress on as OpenMetrics text, at /metrics (loopback, "
                    "unless over TLS with a client CA, or --metrics-insecure)");
    cmd->add_option("--metrics-tls-cert", metrics_tls.cert,
                    "PEM certificate chain: serve the metrics over TLS")
        ->check(CLI::ExistingFile);
    cmd->add_option("--metrics-tls-key", metrics_tls.key, "PEM private key of --metrics-tls-cert")
        ->check(CLI::ExistingFile);
    cmd->add_option("--metrics-tls-client-ca", metrics_tls.client_ca,
                    "PEM CA: scrapers must show a client certificate it signed")
        ->check(CLI::ExistingFile);
    cmd->add_flag("--metrics-insecure", metrics_insecure,
                  "serve a non-loopback --metrics-listen to anyone who can reach it");
  }

  // --junit and --summary-md, for run and compare.
  void add_ci_flags(CLI::App* cmd) {
    cmd->add_option("--junit", junit,
                    "FILE: write a JUnit XML file, a testcase per cell and per verdict, failing on a failed "
                    "cell or a regression");
    cmd->add_option("--summary-md", summary_md,
                    "FILE: write a short Markdown summary of the verdicts and failed cells (also appended to "
                    "$GITHUB_STEP_SUMMARY when that is set)");
  }

  // `loadlab agents` and its flags.
  void add_agents_command() {
    agents_cmd = app.add_subcommand("agents", "print each lab agent's description, or why it is unreachable");
    agents_cmd->add_option("--lab", agents_lab, "lab JSON file")->required();
    agents_cmd->add_option("--lab-credentials", agents_lab_credentials,
                           "JSON file of the lab's tls and token_file, as for run");
  }

  // `loadlab compare` and its flags.
  void add_compare_command() {
    compare_cmd =
        app.add_subcommand("compare", "compare two runs cell by cell; exit status 1 on a regression");
    compare_cmd->add_option("base", compare_base, "baseline run folder or result.json")->required();
    compare_cmd->add_option("new", compare_new, "new run folder or result.json")->required();
    compare_cmd->add_option("--metric", compare_metric,
                            "qps, p50_ms, p90_ms, p99_ms, server_cpu_pct, server_rss_kb, "
                            "client_cpu_pct, capacity (default: the scenario's regression.metric, or qps)");
    threshold_opt = compare_cmd
                        ->add_option("--threshold-pct", compare_threshold,
                                     "smallest change that counts, 0..1000 (default: the scenario's "
                                     "regression.threshold_pct, or 5; 1 for --metric instructions)")
                        ->check(loadlab::number_in(0, loadlab::limits::kMaxThresholdPct));
    compare_cmd->add_option("--report", compare_report,
                            "FILE: write the new run's report.html with these verdicts, each profiled cell's "
                            "server drawn against the base run's (a differential flame graph)");
    add_ci_flags(compare_cmd);
  }

  // `loadlab validate` and its flags.
  void add_validate_command() {
    validate_cmd = app.add_subcommand("validate", "check a scenario and print its cells");
    validate_cmd->add_option("scenario", validate_path, "scenario JSON file, or a folder of them")
        ->required();
    validate_cmd->add_option("--set", validate_overrides, "PATH=VALUE, as for run; repeatable");
    validate_cmd->add_option("--include-root", validate_include_root, kIncludeRootHelp)
        ->check(CLI::ExistingDirectory);
  }

  // `loadlab report` and its flags.
  void add_report_command() {
    report_cmd =
        app.add_subcommand("report", "rebuild report.html, matrix.md and matrix.csv from result.json");
    report_cmd->add_option("dir", report_dir, "run folder (or its result.json)");
    report_cmd->add_option(
        "--index", report_index,
        "DIR: write DIR/index.html over a folder of runs (loadlab-nightly's runs): the "
        "nights newest first, each scenario's verdicts and worst change, links to the reports");
  }
};

int validate(const std::string& path, const std::vector<std::string>& overrides,
             const std::string& include_root) {
  if (std::filesystem::is_directory(path))
    return loadlab::controller::validate_scenario_folder(path, overrides, include_root, std::cout, std::cerr);
  auto s = loadlab::controller::load_scenario_file(path, overrides, include_root);
  auto cells = loadlab::controller::expand(s);
  std::cout << path << ": ok, " << cells.size() << " cells × " << s.repetitions << " repetitions\n";
  for (size_t i = 1; i < s.files.size(); ++i) std::cout << "  includes " << s.files[i] << "\n";
  for (auto& c : cells) std::cout << "  " << c.key() << " (" << c.connections << " connections)\n";
  return 0;
}

int compare(const CommandLine& cl) {
  auto load = [](std::string path) {
    if (std::filesystem::is_directory(path)) path += "/result.json";
    try {
      return loadlab::read_json_file(path);
    } catch (const loadlab::InputError& e) {
      throw e.in_file(path);
    }
  };
  cl.check_ci_paths();
  auto base = load(cl.compare_base), current = load(cl.compare_new);
  loadlab::controller::RegressionDef options;
  try {
    options = loadlab::controller::regression_of_result(current);
  } catch (const loadlab::InputError& e) {
    throw e.in_file(cl.compare_new);
  }
  if (!cl.compare_metric.empty() && cl.compare_metric != options.metric) {
    options.metric = cl.compare_metric;
    options.threshold_pct = loadlab::controller::default_threshold_pct(options.metric);
  }
  if (cl.threshold_opt->count()) options.threshold_pct = cl.compare_threshold;
  auto v = loadlab::controller::compare_results(base, current, options);
  v.set_baseline(cl.compare_base);
  loadlab::controller::write_verdicts(std::cout, v);
  if (!cl.compare_report.empty()) {
    loadlab::controller::write_compare_report(cl.compare_report, cl.compare_base, cl.compare_new, v);
    std::cout << "wrote " << cl.compare_report << "\n";
  }
  current["verdicts"] = nlohmann::json::parse(loadlab::proto::to_json(v));
  current.erase("ab");  // compare judged the two runs; the new run's own A/B is not this verdict
  loadlab::controller::write_ci_results({{current, ""}}, cl.junit, cl.summary_md);
  int status = v.failed() ? loadlab::exit_status::kCellsFailed : loadlab::exit_status::kOk;
  if (v.regressions()) status = loadlab::exit_status::worst(status, loadlab::exit_status::kRegression);
  return status;
}

// The flags of `loadlab run` that exclude or need each other: false, with the line said, when
// they do not fit.
bool run_flags_fit(const loadlab::controller::RunOptions& run, const CommandLine& cl) {
  if (run.scenario_path.empty() == run.resume_dir.empty()) {
    std::cerr << "loadlab run: give either a SCENARIO file or --resume DIR\n";
    return false;
  }
  if (!run.resume_dir.empty() && !run.out_dir.empty()) {
    std::cerr << "loadlab run: --out and --resume exclude each other (a resumed run stays in its folder)\n";
    return false;
  }
  if ((run.baseline == loadlab::controller::kLastGood || run.baseline == loadlab::controller::kHistory) &&
      run.history.empty()) {
    std::cerr << "loadlab run: --baseline " << run.baseline << " needs --history FILE\n";
    return false;
  }
  if (cl.bisect_regressions && run.baseline != loadlab::controller::kHistory &&
      run.baseline != loadlab::controller::kLastGood) {
    std::cerr
        << "loadlab run: --bisect needs --baseline history (the night's regressions against its history)\n";
    return false;
  }
  if (!run.resume_dir.empty() && !run.overrides.empty()) {
    std::cerr << "loadlab run: --set and --resume exclude each other (a resumed run keeps its scenario)\n";
    return false;
  }
  return true;
}

int run(loadlab::controller::RunOptions run, const CommandLine& cl) {
  cl.check_ci_paths();
  if (!run_flags_fit(run, cl)) return loadlab::exit_status::kBadInput;
  // The run's progress for a lab's Prometheus (docs/operations.md, "Metrics"), from before the
  // first cell to the end of the run.
  loadlab::controller::RunMetrics progress;
  loadlab::metrics::Server metrics([&progress] { return progress.families(); });
  if (!cl.metrics_listen.empty()) {
    if (cl.metrics_tls.cert.empty() != cl.metrics_tls.key.empty() ||
        (!cl.metrics_tls.client_ca.empty() && cl.metrics_tls.cert.empty()))
      throw loadlab::InputError("--metrics-tls-cert, --metrics-tls-key",
                                "give both (and --metrics-tls-client-ca only with them)");
    const bool insecure = loadlab::metrics::check_listen(
        cl.metrics_listen, cl.metrics_tls, false, cl.metrics_insecure, "--metrics-listen",
        "--metrics-tls-cert, --metrics-tls-key and --metrics-tls-client-ca");
    const auto at = metrics.start(cl.metrics_listen, cl.metrics_tls, "--metrics-listen");
    std::cerr << "loadlab: metrics on " << (cl.metrics_tls.enabled() ? "https" : "http") << "://" << at
              << "/metrics" << std::endl;
    if (insecure)
      loadlab::component_logger("controller")
          ->warn("{}", loadlab::metrics::insecure_warning("--metrics-listen", at, cl.metrics_tls, false,
                                                          "--metrics-insecure"));
    run.metrics = &progress;
  }
  static std::atomic<int> stop{0};
  stop_on_signals(stop);
  run.stop = &stop;
  run.embedded_agent = loadlab::controller::start_local_agent;
  std::vector<std::string> folders(1);
  const int status = std::filesystem::is_directory(run.scenario_path)
                         ? loadlab::controller::run_scenario_folder(run, std::cout, std::cerr, &folders)
                         : loadlab::controller::run_scenario(run, std::cout, &folders[0]);
  // What was measured is in the run folders already: a CI file that cannot be written is said,
  // and the run's own status kept beside it.
  try {
    loadlab::controller::write_ci_results(loadlab::controller::ci_runs_of(folders), cl.junit, cl.summary_md);
  } catch (const std::exception& e) {
    std::cerr << "loadlab: " << e.what() << "\n";
    return loadlab::exit_status::worst(status, loadlab::exit_status::kLabUnusable);
  }
  // The night's status stands whatever the bisects find: they say which commit, not whether.
  if (cl.bisect_regressions && status == loadlab::exit_status::kRegression && folders.size() == 1)
    loadlab::controller::bisect_regressions(run, folders[0], std::cout);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine cl;
  try {
    cl.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cl.app.exit(e) == 0 ? 0 : 2;
  }
  if (!loadlab::init_logging(cl.log_level)) {
    std::cerr << "loadlab: --log-level: must be one of trace, debug, info, warn, error, off\n";
    return 2;
  }
  try {
    if (*cl.validate_cmd) return validate(cl.validate_path, cl.validate_overrides, cl.validate_include_root);
    if (*cl.agents_cmd)
      return loadlab::controller::describe_agents(cl.agents_lab, cl.agents_lab_credentials, std::cout);
    if (*cl.compare_cmd) return compare(cl);
    if (cl.history.chosen()) return cl.history.run(std::cout);
    if (cl.bisect.chosen()) {
      static std::atomic<int> stop{0};
      stop_on_signals(stop);
      return cl.bisect.run(std::cout, &stop, loadlab::controller::start_local_agent);
    }
    if (*cl.report_cmd) {
      if (cl.report_dir.empty() == cl.report_index.empty()) {
        std::cerr << "loadlab report: give either a run folder DIR or --index DIR\n";
        return loadlab::exit_status::kBadInput;
      }
      return cl.report_index.empty() ? loadlab::controller::report_command(cl.report_dir, std::cout)
                                     : loadlab::controller::index_command(cl.report_index, std::cout);
    }
    auto options = cl.run;
    if (cl.baseline_nights) options.baseline_nights = cl.baseline_nights;
    if (!cl.ab.empty()) {
      auto comma = cl.ab.find(',');
      if (comma == std::string::npos || comma == 0 || comma + 1 == cl.ab.size() ||
          cl.ab.find(',', comma + 1) != std::string::npos)
        throw loadlab::InputError("--ab", "must be two target names, A,B; got \"" + cl.ab + "\"");
      nlohmann::json ab = {{"a", cl.ab.substr(0, comma)}, {"b", cl.ab.substr(comma + 1)}};
      options.overrides.push_back("ab=" + ab.dump());
    }
    if (cl.profile_every_cell) options.overrides.push_back("profile.cells=null");
    // A channel to every agent of the lab, a stream to every agent of a cell: a lab of 1000
    // agents needs more than the 1024 files a shell or systemd starts it with.
    if (auto why = loadlab::raise_open_file_limit(); !why.empty())
      loadlab::component_logger("controller")
          ->warn("{}: no more agents than that can be reached at once", why);
    return run(options, cl);
  } catch (const loadlab::InputError& e) {
    std::cerr << "loadlab: " << cl.input_name(e) << ": " << e.what() << "\n";
    return loadlab::exit_status::kBadInput;
  } catch (const std::exception& e) {  // EnvironmentError: the lab; anything else (SQLite, disk) alike
    std::cerr << "loadlab: " << e.what() << "\n";
    return loadlab::exit_status::kLabUnusable;
  }
}
