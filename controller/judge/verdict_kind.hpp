#pragma once
// What a verdict may say of a cell, and its one spelling: in result.json, in the proto's
// CellVerdict.verdict (a string on the wire, so that readers of result.json need no table),
// in the history's verdicts table and in every table loadlab prints.
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "loadlab/v1/result.pb.h"

namespace loadlab::controller {

enum class Verdict {
  kRegression,    // worse beyond the threshold and the noise (confirmed when confirmation ran)
  kImprovement,   // better beyond the threshold and the noise
  kSame,          // within the threshold
  kNoise,         // beyond the threshold but inside the noise
  kInconclusive,  // the evidence cannot tell (few nights, a disturbed machine, too few pairs)
  kFailed,        // the cell failed: nothing to judge
  kMissing,       // two runs: the cell is in the base run but not in the new one
  kNew,           // two runs: the cell is only in the new run, or failed in the base
};

// "regression", "improvement", "same", "noise", "inconclusive", "failed", "missing", "new".
std::string_view verdict_name(Verdict v);
// verdict_name(v) as a std::string, for the proto's setters.
inline std::string verdict_text(Verdict v) { return std::string(verdict_name(v)); }
// Every verdict, in the table's order (regression first).
const std::vector<Verdict>& every_verdict();
// The verdict spelt `name`; nullopt for any other text (a newer loadlab's word).
std::optional<Verdict> verdict_named(std::string_view name);

inline std::ostream& operator<<(std::ostream& out, Verdict v) { return out << verdict_name(v); }

// A cell verdict's word as the enum; nullopt for a word this loadlab does not know.
inline std::optional<Verdict> verdict_of(const v1::CellVerdict& c) { return verdict_named(c.verdict()); }
inline bool is_verdict(const v1::CellVerdict& c, Verdict v) { return verdict_of(c) == v; }
inline void set_verdict(v1::CellVerdict& c, Verdict v) { c.set_verdict(verdict_text(v)); }

// A regression or an improvement: a change the cell's later nights are judged against.
inline bool is_change(Verdict v) { return v == Verdict::kRegression || v == Verdict::kImprovement; }
// Counted in a run's `failed`: the cell has no figure to judge.
inline bool is_failure(Verdict v) { return v == Verdict::kFailed || v == Verdict::kMissing; }

}  // namespace loadlab::controller
