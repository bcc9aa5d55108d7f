#include "run/bisect_search.hpp"

#include <cstdlib>
#include <stdexcept>

namespace loadlab::controller {

BisectSearch::BisectSearch(size_t candidates) : known_(candidates) {
  if (candidates == 0) throw std::invalid_argument("a bisect needs at least the bad commit");
  known_.back() = StepOutcome::kBad;
}

void BisectSearch::record(size_t index, StepOutcome outcome) { known_.at(index) = outcome; }

long BisectSearch::last_good() const {
  long good = -1;
  for (size_t i = 0; i < first_known_bad(); ++i)
    if (known_[i] == StepOutcome::kGood) good = static_cast<long>(i);
  return good;
}

size_t BisectSearch::first_known_bad() const {
  for (size_t i = 0; i < known_.size(); ++i)
    if (known_[i] == StepOutcome::kBad) return i;
  return known_.size() - 1;
}

std::optional<size_t> BisectSearch::next() const {
  const long lo = last_good();
  const long hi = static_cast<long>(first_known_bad());
  const long mid = lo + (hi - lo) / 2;
  std::optional<size_t> best;
  for (long i = lo + 1; i < hi; ++i) {
    if (known_[static_cast<size_t>(i)]) continue;  // tested: skipped
    if (!best || std::labs(i - mid) < std::labs(static_cast<long>(*best) - mid))
      best = static_cast<size_t>(i);
  }
  return best;
}

std::optional<size_t> BisectSearch::first_bad() const {
  if (next()) return std::nullopt;
  if (static_cast<long>(first_known_bad()) - last_good() != 1) return std::nullopt;
  return first_known_bad();
}

std::vector<size_t> BisectSearch::range() const {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(last_good() + 1); i <= first_known_bad(); ++i) out.push_back(i);
  return out;
}

size_t BisectSearch::worst_steps() const {
  size_t steps = 0;
  for (size_t span = known_.size(); span > 1; span = (span + 1) / 2) ++steps;
  return steps;
}

}  // namespace loadlab::controller
