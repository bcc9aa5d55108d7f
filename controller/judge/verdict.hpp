#pragma once
// The nightly verdict (docs/verdicts-design.md): one cell's night against the nights before
// it, with the history as the noise model.
//
// The unit of evidence is a night's figure: the median of its repetitions (a run's per-second
// intervals are correlated, and nights differ by more than their seconds do). A cell's baseline
// is its K most recent earlier nights that ran on the same machine (fingerprint), since its last
// accepted level, that were not themselves judged a regression or an improvement (unless the cell
// came back from it). On the log of the figures, a robust model of up to noise_nights of them
// (level_model.hpp: outliers left out and named, spells, two recurring levels) gives the centre
// and spread of a one-sided prediction interval for a night of unchanged code (Student's t with
// the spread's degrees of freedom, so few nights give a wide band). A night is a regression when
// it is worse than the baseline by more than the threshold AND outside the band, and its
// confirmation (the cell measured again at the end of the run, on fresh targets) is too: the
// cell's share of the false-alarm budget is spent on the pair (confirmed_quantile), so the band
// is narrower than one measurement's; without a confirmation, the night must be beyond one
// measurement's band. A night that looked like one but whose confirmation did not is `noise`. The minimum
// detectable change is the true change the procedure catches at least 95 % of the time: beyond the band (and
// the threshold) by as many prediction spreads as one measurement needs to land there 99 % of the time with a
// spread estimated from the baseline, so that the two measurements both do, however they are correlated.
//
// Everything here is a pure function of the series: `loadlab run --baseline history` judges
// tonight with it, and `loadlab history --verdicts` replays it over every night of a history,
// each night seeing only the nights before it, with the same results.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "judge/verdict_kind.hpp"
#include "loadlab/v1/result.pb.h"

namespace loadlab::controller {

// Baseline nights with a figure of other work needed before a night's is compared with theirs.
inline constexpr size_t kOtherWorkMinNights = 3;

struct VerdictOptions {
  bool higher_is_better = true;  // the metric's direction (qps: true)
  double threshold_pct = 5;      // a smaller change is never a regression
  // The probability that a night of unchanged code is judged a regression in this cell (one
  // side); the run's budget (regression.false_alarm_pct) split over its cells. It is spent on
  // the pair of measurements a regression needs (the night's and its confirmation's, both
  // beyond one critical value), not on each of them: see confirm_correlation.
  double alpha = 0.0025;
  // The correlation between a night's first measurement and its confirmation (on fresh targets,
  // the same night) around the cell's level: the critical value that both must pass is chosen
  // so that both pass with probability alpha at this correlation. 0: levels multiply; 1: the
  // confirmation adds nothing (the single-measurement band). On a VM it is far from 0: the
  // confirmation shares the night's host (the values: docs/measurements/verdicts.md).
  double confirm_correlation = 0.6;
  uint32_t baseline_nights = 10;  // K: the most recent baseline nights used
  // The nights (of the same level and machines) whose spread within their spells gives the
  // band's spread (level_model.hpp): real noise drifts and comes in spells, and K calm nights
  // in a row would make a band too narrow for the next spell (measured:
  // docs/measurements/verdicts.md).
  uint32_t noise_nights = 30;
  uint32_t min_nights = 5;  // fewer: the verdict is at most inconclusive, but for a change
                            // beyond even the few nights' wide band
  // A level is accepted by itself once this many nights in a row were judged a regression (or
  // an improvement) the same way: they start the new level. 0 = only `loadlab history accept`.
  uint32_t accept_after_nights = 0;
  // Steal time (100 = one core) above which a night is inconclusive when its baseline saw at
  // most a third of it. 1.5, not 5: a band that one odd night no longer widens is narrow enough
  // for a host spell's first night to cross it (a recorded night did at 1.7 % steal:
  // docs/measurements/verdicts.md).
  double steal_limit_pct = 1.5;
  // A measurement was disturbed (something else ran on the cell's CPUs) when half its
  // repetitions were flagged busy-machine, or its processes waited for a CPU more than
  // wait_factor × the most any baseline night waited, plus wait_margin_pct, or the other work
  // on its CPUs stood kBusyOutlierPct (flags.hpp) above the median of its baseline nights' (at
  // least kOtherWorkMinNights of them with the figure).
  double wait_factor = 1.5;
  // The metric does not move with what else runs on the machine (instructions per request,
  // counted under callgrind or in user space): no night is disturbed or inconclusive for the
  // host's steal, busy neighbours or waits.
  bool host_insensitive = false;
  double wait_margin_pct = 5;
};

// One night of a cell, as the history (or tonight's run) has it.
struct Night {
  int64_t run_id = 0;
  std::string started_at;
  bool ok = false;
  std::vector<double> values;        // per repetition
  std::vector<double> confirmation;  // per confirming repetition; empty when none ran
  std::string fingerprint;           // the machines the cell ran on (canonical text); "" unknown
  double steal_pct = 0;              // the cell's CPUs' steal over its windows (median repetition)
  std::string target_build;          // what the target was (not part of the fingerprint)
  // Interference: how long the cell's processes waited for a CPU (Usage.wait_pct of both sides,
  // median repetition; none: unknown), and how many repetitions were flagged busy-machine, of the
  // night's measurement and of its confirmation.
  std::optional<double> wait_pct, confirm_wait_pct;
  uint32_t busy_reps = 0, confirm_busy_reps = 0;
  // Other work on the cell's CPUs (flags.hpp, other_work_pct; median repetition; none: unknown):
  // a night whose figure is kBusyOutlierPct above its baseline nights' median was disturbed.
  std::optional<double> other_pct, confirm_other_pct;
};

// `loadlab history accept`: a new level starts at night `start` of the series, for the nights
// judged from night `effective_from` on (the first night after the acceptance; the nights
// before kept the verdicts they had when they ran). The nights of the new level judged under
// the old one (a regression that was accepted) are part of its baseline.
struct AcceptedLevel {
  size_t start = 0;
  size_t effective_from = 0;
};

// A night's figure: the lower median of its repetitions' finite figures (as the cell's
// figures); none when no repetition has one.
std::optional<double> night_figure(const std::vector<double>& values);

struct NightVerdict {
  Verdict verdict = Verdict::kInconclusive;  // kFailed when the night's cell failed
  std::string reason;                        // why, in words
  bool suspect = false;                 // the first measurement alone says regression: confirmation is wanted
  std::optional<double> value;          // the night's figure; none when the cell gave none
  std::optional<double> confirm_value;  // the confirmation's figure, when one ran
  // The band's centre (geometric mean of the baseline nights), and the night against it; with
  // one baseline night, that night's figure and no band.
  std::optional<double> baseline, change_pct;
  // The prediction interval for a night of unchanged code, and the minimum detectable change
  // (%): with a band only.
  std::optional<double> band_low, band_high, mdc_pct;
  uint32_t nights = 0;                 // baseline nights used
  std::vector<size_t> baseline_index;  // which earlier nights of the series (indices)
  bool new_level = false;              // this night starts a level (accepted or automatic)
  // What the night adds to later nights' bands: its figure, or its confirmation's when that
  // contradicted a first measurement outside the band (the measurement that held up).
  double band_value = 0;
  bool disturbed = false;             // its measurement was disturbed: inconclusive, and in no later band
  std::vector<size_t> outlier_index;  // earlier nights left out of the band as outliers (indices)
};

// Every night of `series` (oldest first), each judged against the nights before it.
std::vector<NightVerdict> judge_series(const std::vector<Night>& series, const VerdictOptions& o,
                                       const std::vector<AcceptedLevel>& accepted = {});

// The per-cell false-alarm probability for a run of `cells` cells whose nights of unchanged
// code may alarm `false_alarm_pct` % of the time (Bonferroni: the budget split evenly).
double cell_alpha(double false_alarm_pct, size_t cells);

// A change as verdicts word it: "+12.3 %" (sign = false: "12.3 %").
std::string pct_text(double v, bool sign = true);

// A machine's fingerprint as the history keeps it and a verdict compares it:
// "cpu_model=AMD EPYC;cpus=2;threads_per_core=1;governor=;boost=;kernel=6.1.0;virtual=yes".
std::string fingerprint_text(const v1::MachineFingerprint& f);

// Quantiles: Student's t with `df` degrees of freedom (Boost.Math).
double t_quantile(double p, double df);
// How many (estimated) spreads beyond a band a change must be for one measurement to land
// there with probability `power`, when the spread was estimated with `df` degrees of freedom:
// q with E[Φ(q·W)] = power, W = s/σ = sqrt(χ²(df)/df). A night whose spread came out low has a
// narrow band and a small reported change, so the known-σ quantile would overstate the power.
double detect_quantile(double df, double power);
// The power each of a verdict's two measurements (the night's, its confirmation's) is sized
// for: both land beyond the band at least 95 % of the time, however they are correlated, with
// room for the nights whose spread came out low.
inline constexpr double kPowerPerMeasurement = 0.99;
// The critical value c that a night's first measurement and its confirmation must both pass
// (each beyond the centre by c · s · √(1 + 1/n)) for a night of unchanged code to do so with
// probability `alpha`, when s was estimated with `df` degrees of freedom, the centre is the mean
// of `n` nights and the two measurements correlate by `rho` around the level:
// E_W[P(Z₁ > cW, Z₂ > cW)], W = s/σ, (Z₁, Z₂) normal with correlation (ρ + 1/n) / (1 + 1/n).
// ρ = 1 gives Student's t quantile.
double confirmed_quantile(double alpha, double df, double n, double rho);

}  // namespace loadlab::controller
