#include "cli/bisect_cli.hpp"

#include <CLI/CLI.hpp>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::controller {

void BisectCommand::add_to(CLI::App& app) {
  command_ = app.add_subcommand(
      "bisect",
      "find the first commit of a target built from a commit that makes a cell worse: an A/B of each "
      "midpoint against the good commit; exit 0 when one is named");
  auto& o = options_;
  command_->add_option("scenario", o.run.scenario_path, "scenario JSON file");
  command_->add_option("--cell", o.cell, "the cell's key, as result.json and `loadlab validate` name it");
  command_->add_option("--good", o.good, "a commit (branch, tag, sha) where the cell was good");
  command_->add_option("--bad", o.bad, "a later commit where it is worse");
  command_->add_option("--lab", o.run.lab_path, "lab JSON file: the agents whose catalog builds the target");
  command_->add_option("--lab-credentials", o.run.lab_credentials_path, "as for run");
  command_->add_option("--set", o.run.overrides, "PATH=VALUE, as for run; repeatable");
  command_
      ->add_option("--pairs", o.pairs,
                   "A/B pairs of a step (doubled while it is inconclusive); default the scenario's "
                   "repetitions, at least 5")
      ->check(CLI::Range(1, 10000));
  command_->add_option("--out", o.out_dir, "the bisect's folder (default bisects/NAME-TIME)");
  command_->add_option("--resume", o.resume_dir, "continue the bisect in this folder")
      ->check(CLI::ExistingDirectory);
}

bool BisectCommand::chosen() const { return command_ && command_->parsed(); }

int BisectCommand::run(std::ostream& out, const std::atomic<int>* stop, EmbeddedAgentFactory embedded) const {
  BisectOptions o = options_;
  if (o.resume_dir.empty()) {
    if (o.run.scenario_path.empty()) throw InputError("SCENARIO", "give a scenario file, or --resume DIR");
    for (auto [flag, value] : {std::pair{"--cell", &o.cell}, {"--good", &o.good}, {"--bad", &o.bad}})
      if (value->empty()) throw InputError(flag, "is required (or --resume DIR)");
  } else if (!o.run.scenario_path.empty() || !o.cell.empty() || !o.out_dir.empty() ||
             !o.run.overrides.empty()) {
    throw InputError("--resume", "continues a bisect as it began: give no SCENARIO, --cell, --set or --out");
  }
  o.run.stop = stop;
  o.run.embedded_agent = std::move(embedded);
  return run_bisect(o, out);
}

}  // namespace loadlab::controller
