#pragma once
// Saturation guard: flags on a repetition whose figures measure the lab, not the target.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/results.hpp"

namespace loadlab::controller {

// The kinds of flag a repetition may carry, each spelt once (flag_name): in result.json, the
// history's flags column and every table. A kind that names an agent is written KIND:AGENT.
enum class QualityFlag { kClientSaturated, kRateNotHeld, kBusyMachine, kStalled, kWindowSkew, kProfiled };
std::string_view flag_name(QualityFlag f);
// The flag as written: "client-saturated", or "busy-machine:AGENT" with an agent.
std::string flag_text(QualityFlag f, const std::string& agent = "");
// The kind of a written flag ("busy-machine:l1" is kBusyMachine); none for another word.
std::optional<QualityFlag> flag_kind(std::string_view written);
// The repetition carries a flag of this kind (any agent's).
bool has_flag(const v1::Repetition& r, QualityFlag f);

// "client-saturated": a load agent's worker used ≥ 90 % of its CPUs (the set it was allowed
// on, Usage.cpus; else its machine's cores; no more CPUs than it has threads: a one-thread
// worker at 95 % of a core is saturated on any machine).
// "rate-not-held": open loop, a load agent began fewer than 99 % of the requests its
// schedule had due: the figures are at a lower rate than asked.
// "busy-machine:NAME": the CPUs the cell's processes on an agent's machine were allowed on
// (their Usage.cpus; the whole machine from an agent that does not say) spent at least
// busy_machine_threshold_pct of them on work other than theirs during the window (a noisy
// neighbour).
// "stalled:NAME": the CPUs of the cell's processes on an agent's machine stopped for 5 ms or
// more during the window (Usage.stalls: the hypervisor took the VM's CPU, or a kernel thread
// held it), which no other-work figure shows. It moves a tail latency, not a rate: a capacity
// search measures such a step again (docs/capacity.md); other verdicts only show it.
// ("window-skew", added by the repetition: the windows of a scheduled start opened further
// apart than execution.max_skew_ms.)
// ("profiled", added by the cell: perf sampled its processes over the window, which costs
// CPU (docs/profiles.md); its nights are judged only against nights profiled alike.)
// `cores` maps agent names to their core counts (from Describe).
std::vector<std::string> saturation_flags(const v1::Repetition& r,
                                          const std::map<std::string, uint32_t>& cores);

// Other work on a cell's CPUs that flags it busy-machine, in % of one core, for a set of `cpus`
// CPUs (0: unknown): a fifth of a core, or a tenth of each CPU of a larger set. Why a fifth: a
// `yes` beside a delay-0 cell's target and load on one CPU took 43 % of it and cut the cell's
// req/s from 35 k to 13.5 k, and went unflagged at the earlier half a core; on quiet CPUs
// this figure stayed under 7 % in 99 of 100 repetitions (the 72 A/A runs of
// docs/measurements/verdicts.md).
double busy_machine_threshold_pct(uint32_t cpus);

// A neighbour the threshold above misses: where a cell's processes' CPU (from /proc/PID/stat)
// adds up to more than its CPUs' busy time (from /proc/stat), other work reads low (delay-0
// cells at -15 to -35 %), so a `yes` taking 43 % of the CPU can read as +10. Against the cell's
// own level it stands out: among many repetitions of one cell on the same CPUs (an A/B pair of
// cells, whose pairs share them), one whose other work is kBusyOutlierPct above the median of
// all of them is flagged "busy-machine:AGENT" too. In the 72 A/A runs of
// docs/measurements/verdicts.md a quiet repetition sat within 10.6 % of its cell's median in 99
// of 100 (a `yes` adds 51).
inline constexpr double kBusyOutlierPct = 20.0;
inline constexpr size_t kBusyOutlierMinRepetitions = 10;  // fewer: no median to trust
// Adds the flag to those of `reps` (at least kBusyOutlierMinRepetitions of them; else none).
void flag_busy_outliers(const std::vector<v1::Repetition*>& reps,
                        const std::map<std::string, uint32_t>& cores);

// The most other work any machine of the cell saw on the cell's CPUs during the repetition, in
// % of one core (can be negative: see above); none when no machine gave a busy figure. A
// nightly's 3 repetitions give no median to trust, so the verdict compares the night's figure
// with its baseline nights' level (NightVerdicts, "disturbed").
std::optional<double> other_work_pct(const v1::Repetition& r);

// The flags as the table, CSV, Markdown, HTML and log lines show them: a flag naming an agent
// ("busy-machine:l1") is listed while at most kFlagAgentsListed agents carry it, and counted
// beyond ("busy-machine: 41 agents"), in the order the kinds first appear. result.json keeps
// every flag.
inline constexpr size_t kFlagAgentsListed = 2;
std::vector<std::string> summarized_flags(const std::vector<std::string>& flags);

// The repetition carries a "busy-machine:" flag (any agent's).
inline bool busy_machine(const v1::Repetition& r) { return has_flag(r, QualityFlag::kBusyMachine); }
// The repetition carries a "stalled:" flag (any agent's).
inline bool stalled(const v1::Repetition& r) { return has_flag(r, QualityFlag::kStalled); }

}  // namespace loadlab::controller
