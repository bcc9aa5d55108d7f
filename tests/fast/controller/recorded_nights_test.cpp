// The verdict on real nights of this project's 2-core VM, recorded by bench/verdicts.sh (the
// bench matrix: a one-thread target at delay 0 and 2 ms × 1 and 4 client threads, 3
// repetitions and 3 confirmations a night, unchanged code) and kept in tests/data/verdicts:
// their drift between nights is judged as it was measured, never as a regression; a step
// added to the same nights is a regression from its night on, and no longer after it is
// accepted. Each recording is one parameter: nights.csv (2026-12-02, beside an hour of this
// project's builds; before the export had the other-work figure) and nights-2.csv (2026-12-03,
// with it).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>

#include "judge/verdict.hpp"

namespace loadlab::controller {
namespace {

// One CSV line's fields (quoted fields may hold commas).
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// Each recorded night's confirmation steal, per cell (Night keeps the measurement's).
std::map<std::string, std::vector<double>> confirm_steal_;

// The recorded nights of one file, per cell, oldest first, as History::nights reads them.
std::map<std::string, std::vector<Night>> recorded(const std::string& file) {
  confirm_steal_.clear();
  std::ifstream in(std::string(LOADLAB_SOURCE_DIR) + "/tests/data/verdicts/" + file);
  EXPECT_TRUE(in.good()) << file;
  std::string line;
  auto next_line = [&] {
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // the CSV's line ends are \r\n
    return true;
  };
  next_line();
  const std::string columns =
      "night,started_at,cell,phase,qps,steal_pct,wait_pct,busy,fingerprint,settings,target_build";
  // The other-work figure (flags.hpp, other_work_pct) is a twelfth column where it was exported.
  const bool with_other = line == columns + ",other_pct";
  EXPECT_TRUE(with_other || line == columns) << line;
  const size_t width = with_other ? 12 : 11;
  std::map<std::string, std::vector<Night>> cells;
  // Each night's per-repetition figures that Night keeps one of, for its measurement [0] and
  // its confirmation [1].
  struct Figures {
    std::vector<double> wait, steal, other;
  };
  std::map<std::string, std::vector<std::array<Figures, 2>>> figures;
  while (next_line()) {
    auto f = fields(line);
    EXPECT_EQ(f.size(), width) << line;
    if (f.size() != width) continue;
    auto& nights = cells[f[2]];
    const int64_t run = std::stoll(f[0]);
    if (nights.empty() || nights.back().run_id != run) {
      Night n;
      n.run_id = run;
      n.started_at = f[1];
      n.ok = true;
      n.fingerprint = "bench|" + f[8] + "\ncell|settings=" + f[9];
      n.target_build = f[10];
      nights.push_back(n);
      figures[f[2]].emplace_back();
    }
    Night& n = nights.back();
    const bool confirm = f[3] == "confirm";
    (confirm ? n.confirmation : n.values).push_back(std::stod(f[4]));
    (confirm ? n.confirm_busy_reps : n.busy_reps) += f[7] == "1";
    Figures& fig = figures[f[2]].back()[confirm ? 1 : 0];
    fig.steal.push_back(std::stod(f[5]));
    if (!f[6].empty()) fig.wait.push_back(std::stod(f[6]));
    if (with_other && !f[11].empty()) fig.other.push_back(std::stod(f[11]));
  }
  for (auto& [key, nights] : cells)
    for (size_t i = 0; i < nights.size(); ++i) {
      const auto& [measure, confirmation] = figures[key][i];
      nights[i].wait_pct = night_figure(measure.wait);
      nights[i].confirm_wait_pct = night_figure(confirmation.wait);
      nights[i].other_pct = night_figure(measure.other);
      nights[i].confirm_other_pct = night_figure(confirmation.other);
      nights[i].steal_pct = night_figure(measure.steal).value_or(0);
      confirm_steal_[key].push_back(night_figure(confirmation.steal).value_or(0));
    }
  return cells;
}

// The nights as the nightly measures them (execution.remeasure_disturbed): a night whose
// measurement was disturbed is measured again at the end of the run, and that measurement is
// the night's. The recording measured every cell again at the end of each night
// (confirm.every_cell), without waiting for quiet CPUs: that measurement stands in for it, and
// the night has no confirmation left (a regression it showed would stand unconfirmed).
std::map<std::string, std::vector<Night>> as_measured(std::map<std::string, std::vector<Night>> cells,
                                                      const VerdictOptions& o, size_t* remeasured) {
  for (auto& [key, nights] : cells)
    for (size_t i = 0; i < nights.size(); ++i) {
      Night& n = nights[i];
      if (n.confirmation.empty()) continue;
      const std::vector<Night> so_far(nights.begin(), nights.begin() + static_cast<ptrdiff_t>(i) + 1);
      if (!judge_series(so_far, o).back().disturbed) continue;
      n.values = std::exchange(n.confirmation, {});
      n.busy_reps = n.confirm_busy_reps;
      n.wait_pct = n.confirm_wait_pct;
      n.other_pct = n.confirm_other_pct;
      n.steal_pct = confirm_steal_.at(key)[i];
      ++*remeasured;
    }
  return cells;
}

VerdictOptions options(size_t cells) {
  VerdictOptions o;
  o.alpha = cell_alpha(1, cells);  // the defaults: 1 % of nights over the matrix's cells
  return o;
}

class RecordedNights : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordedNights, UnchangedCodeIsNeverARegressionWhateverTheNightsDrift) {
  size_t remeasured = 0;
  auto cells = as_measured(recorded(GetParam()), options(4), &remeasured);
  ASSERT_EQ(cells.size(), 4u);
  size_t judged = 0, inconclusive = 0, busy = 0, first = 0, first_inconclusive = 0;
  for (auto& [key, nights] : cells) {
    ASSERT_GE(nights.size(), 60u) << key;
    auto v = judge_series(nights, options(cells.size()));
    std::vector<double> mdc;
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_NE(v[i].verdict, Verdict::kRegression)
          << key << " night " << nights[i].run_id << ": " << v[i].reason;
      // A cell's first nights are inconclusive by design (fewer than min_nights to judge by):
      // the share is the nightly's once it has them.
      if (i < options(cells.size()).min_nights) {
        ++first;
        first_inconclusive += v[i].verdict == Verdict::kInconclusive;
        continue;
      }
      ++judged;
      inconclusive += v[i].verdict == Verdict::kInconclusive;
      // Busy both times it was measured (the recording ran beside this project's builds on some
      // nights): counted, not excused.
      busy += v[i].disturbed;
      if (v[i].mdc_pct) mdc.push_back(*v[i].mdc_pct);
    }
    EXPECT_GT(mdc.size(), nights.size() / 2) << key << ": every judged night says what it could show";
  }
  std::cout << judged + first << " cell-nights, " << remeasured
            << " measured again (disturbed the first time); " << first_inconclusive << " of the first "
            << first << " (fewer than 5 nights) inconclusive; of the " << judged << " after them "
            << inconclusive << " inconclusive (" << busy << " disturbed both times)\n";
  // Dec02: measured once more at once, 13 of the 39 disturbed nights were judged; the other 26
  // were nights beside a build of this project that outlasted the night (the nightly waits and
  // measures again up to 3 times; the recording had one measurement more to offer). Dec03 (the
  // nightly's own re-measurement recorded, ordinary use beside it): 3 measured again, 0 of the
  // 280 nights after each cell's first five inconclusive.
  // Signed: a disturbed night is measured again only when the recording holds a confirmation for
  // it, so busy may exceed remeasured, and unsigned the difference would wrap and always pass.
  const auto count = [](size_t n) { return static_cast<long long>(n); };
  EXPECT_GE(count(remeasured) - count(busy), count(remeasured / 3))
      << busy << " of " << remeasured << " disturbed both times";
  // Every other reason (steal, a wide band with few nights) stays under a tenth.
  EXPECT_LE(count(inconclusive) - count(busy), count(judged / 10))
      << inconclusive << " of " << judged << " cell-nights inconclusive";
}

// The delay-2 ms cells (a timer-bound target) are the steadiest: a step there is the one the
// recorded nights can show at all sizes the threshold allows.
TEST_P(RecordedNights, AStepIsARegressionFromItsNightOnUntilAccepted) {
  auto cells = recorded(GetParam());
  for (const char* key : {"server/d2/t1", "server/d2/t4"}) {
    auto nights = cells.at(key);
    auto o = options(cells.size());
    auto before = judge_series(nights, o);
    // Twice the cell's largest minimum detectable change in its second half: a change it must show.
    const size_t step = nights.size() / 2;
    double mdc = 0;
    for (size_t i = step; i < before.size(); ++i)
      if (before[i].mdc_pct) mdc = std::max(mdc, *before[i].mdc_pct);
    const double factor = 1 - std::min(90.0, 2 * mdc) / 100;
    for (size_t i = step; i < nights.size(); ++i) {
      for (auto& x : nights[i].values) x *= factor;
      for (auto& x : nights[i].confirmation) x *= factor;
    }
    auto v = judge_series(nights, o);
    size_t caught = 0, judged = 0;
    for (size_t i = step; i < v.size(); ++i) {
      if (v[i].verdict == Verdict::kInconclusive) continue;  // a disturbed night shows nothing either way
      ++judged;
      caught += v[i].verdict == Verdict::kRegression;
      EXPECT_EQ(v[i].verdict, Verdict::kRegression)
          << key << " night " << nights[i].run_id << ": " << v[i].reason;
    }
    EXPECT_GE(judged, (nights.size() - step) * 9 / 10) << key;
    // Accepted at the step, the acceptance made five nights later: from then on the step is the
    // level, and nothing alarms.
    auto accepted = judge_series(nights, o, {{step, step + 5}});
    for (size_t i = step + 5; i < v.size(); ++i)
      EXPECT_NE(accepted[i].verdict, Verdict::kRegression)
          << key << " night " << nights[i].run_id << ": " << accepted[i].reason;
    for (size_t i = step; i < step + 5; ++i)
      EXPECT_EQ(accepted[i].verdict, v[i].verdict) << "judged before the accept";
  }
}

// Power on real noise, replayed: each recorded night from the 10th on is made a first slowed
// night (its measurement and its confirmation times 1 - STEP) and judged against the
// unchanged nights before it, as the nightly would judge it; once with the recording as it
// is, once with two odd first nights in front (a host settling: the first +35 %, the second
// -25 %, as in issue 45's table). Prints the share caught per cell and step size (the
// measurement's figures, docs/measurements/verdicts.md); holds the sizes the cells can show.
TEST_P(RecordedNights, AFirstSlowedNightIsCaughtAsOftenAsItsCellsNoiseAllows) {
  size_t remeasured = 0;
  const auto cells = as_measured(recorded(GetParam()), options(4), &remeasured);
  const auto o = options(cells.size());
  // Every other night and three sizes keep the test to seconds; LOADLAB_REPLAY_FULL=1 replays
  // every night at five sizes (the figures of the measurements page).
  const bool full = std::getenv("LOADLAB_REPLAY_FULL") != nullptr;
  const std::vector<double> steps =
      full ? std::vector<double>{5, 8, 10, 15, 20} : std::vector<double>{8, 15, 20};
  const size_t stride = full ? 1 : 2;
  for (bool odd_first : {false, true}) {
    for (const auto& [key, recorded_nights] : cells) {
      auto nights = recorded_nights;
      if (odd_first)
        for (auto [i, factor] : {std::pair{0, 1.35}, std::pair{1, 0.75}}) {
          for (auto& x : nights[i].values) x *= factor;
          for (auto& x : nights[i].confirmation) x *= factor;
        }
      std::cout << GetParam() << (odd_first ? " odd first nights " : " ") << key << ":";
      for (double step : steps) {
        size_t judged = 0, caught = 0;
        for (size_t k = 10; k < nights.size(); k += stride) {
          std::vector<Night> so_far(nights.begin(), nights.begin() + static_cast<ptrdiff_t>(k) + 1);
          for (auto& x : so_far.back().values) x *= 1 - step / 100;
          for (auto& x : so_far.back().confirmation) x *= 1 - step / 100;
          const auto v = judge_series(so_far, o).back();
          if (v.verdict == Verdict::kInconclusive) continue;
          ++judged;
          caught += v.verdict == Verdict::kRegression;
        }
        const double share = judged ? 100.0 * caught / judged : 0;
        std::cout << " " << step << " % caught " << caught << "/" << judged << " (" << std::round(share)
                  << " %);";
        // What both recordings show for the timer-bound cells, odd first nights or not: a step of
        // 15 % or more is caught on nearly every night (the delay-0 cells of Dec02 moved between
        // 5 k and 16 k req/s from night to night: they show no such step).
        if (key.find("/d2/") != std::string::npos && step >= 15) EXPECT_GE(share, 95) << key << " " << step;
      }
      std::cout << "\n";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Recordings, RecordedNights, ::testing::Values("nights.csv", "nights-2.csv"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return p.index == 0 ? std::string("Dec02") : std::string("Dec03");
                         });

}  // namespace
}  // namespace loadlab::controller
