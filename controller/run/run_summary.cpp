#include "run/run_summary.hpp"

#include <algorithm>

#include "judge/ab_verdicts.hpp"
#include "judge/compare.hpp"
#include "loadlab/shared/exit_status.hpp"
#include "report/reporters.hpp"

namespace loadlab::controller {

int write_summary(std::ostream& out, const Scenario& s, const RunCells& run,
                  const std::filesystem::path& folder, int stopped_by) {
  const auto shown = run.finished();
  const auto failed = std::count_if(shown.begin(), shown.end(), [](auto& c) { return !c.ok(); });
  const size_t cells = run.cells.size();
  out << "\n"
      << s.name << " (" << cells << " cells, " << s.repetitions << " repetition"
      << (s.repetitions == 1 ? "" : "s") << " each)\n\n";
  write_table(out, shown);
  out << "\nresults: " << (folder / "result.json").string() << ", matrix.csv, matrix.md\n";
  if (failed) out << failed << " of " << cells << " cells failed\n";
  if (stopped_by) {
    out << "interrupted by signal " << stopped_by << " after " << shown.size() << " of " << cells
        << " cells; continue with: loadlab run --resume " << folder.string() << "\n";
    return exit_status::kSignalBase + stopped_by;
  }
  return failed ? exit_status::kCellsFailed : exit_status::kOk;
}

int write_verdict_summary(std::ostream& out, const Scenario& s, const v1::Verdicts* baseline,
                          const v1::Verdicts* ab, int status) {
  if (baseline) {
    out << "\nagainst " << (baseline->method() == "history" ? "the history " : "") << baseline->baseline()
        << ":\n";
    write_verdicts(out, *baseline);
    if (baseline->regressions()) status = exit_status::worst(status, exit_status::kRegression);
  }
  if (ab) {
    out << "\nA/B: " << s.ab_b << " against " << s.ab_a << ", pair by pair:\n";
    write_verdicts(out, *ab);
    out << "\n";
    write_ab_pairs(out, *ab);
    if (ab->regressions()) status = exit_status::worst(status, exit_status::kRegression);
  }
  return status;
}

}  // namespace loadlab::controller
