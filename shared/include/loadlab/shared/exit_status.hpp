#pragma once
// The exit statuses of `loadlab run`, `loadlab compare` and `loadlab-nightly`, for monitoring:
// each means one thing (docs/nightly.md, "Exit statuses").
namespace loadlab::exit_status {

inline constexpr int kOk = 0;
inline constexpr int kRegression = 1;    // a cell regressed against its baseline; nothing else
inline constexpr int kBadInput = 2;      // a flag, scenario, lab file or result that is wrong
inline constexpr int kCellsFailed = 3;   // some cells failed; the others were measured
inline constexpr int kLabUnusable = 4;   // no reachable agent, a folder not writable, a history
                                         // that cannot be read: nothing could be measured
inline constexpr int kSignalBase = 128;  // 128 + N: stopped by signal N (finished cells kept)

// The status of outcomes that happened together (several scenarios of a folder, failed cells
// beside a regression), by precedence: a signal (the run is not finished), a regression (what
// monitoring exists for), bad input, an unusable lab (nothing was measured there), failed
// cells (the rest was), ok.
inline int worst(int a, int b) {
  auto rank = [](int s) {
    if (s >= kSignalBase) return 6;
    switch (s) {
      case kRegression:
        return 5;
      case kBadInput:
        return 4;
      case kLabUnusable:
        return 3;
      case kCellsFailed:
        return 2;
      case kOk:
        return 0;
      default:
        return 1;
    }
  };
  return rank(b) > rank(a) || (rank(b) == rank(a) && b > a) ? b : a;
}

}  // namespace loadlab::exit_status
