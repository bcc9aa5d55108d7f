// E-divisive means: Matteson, D. S. and James, N. A. (2014), "A Nonparametric Approach for
// Multiple Change Point Analysis of Multivariate Data", Journal of the American Statistical
// Association 109(505), 334-345. The method MongoDB's signal-processing-algorithms and
// Apache Otava (Hunter) run over nightly performance results.
//
// Written here rather than taken from a library: there is no C or C++ implementation in
// Debian (the ones in use are Python, R's `ecp`, Java), and the algorithm is small. Choices:
// - alpha = 1 (plain absolute differences), univariate.
// - The paper's search over kappa (the right sample may end before the segment does), made
//   O(n²) per round with 2-D prefix sums of the distances. Without it (right sample = the
//   rest of the segment), a regression that is fixed ten nights later is often missed:
//   the two outer levels agree and the split statistic stays weak.
// - The paper's hierarchical procedure: at each round, every current segment proposes its
//   best split; the strongest is tested against permutations of the values within each
//   segment (the max over segments, like the observed one), and kept when significant.
// - The shuffles use a fixed-seed splitmix64 and a hand-written Fisher-Yates, because
//   std::shuffle and the std distributions are not specified bit for bit: the same series
//   gives the same change points on every machine and compiler.
#include "judge/change_points.hpp"

#include <algorithm>
#include <cmath>

namespace loadlab::controller {

namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n small: the modulo bias is below 2^-50).
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

struct Split {
  size_t at = 0;         // absolute index of the first element of the right part
  double q = -INFINITY;  // Q̂; -inf when no segment is long enough to split
};

// Sums of |v_i − v_j| over rectangles of index pairs in O(1), from 2-D prefix sums: O(n²)
// to build, so every split of every segment is scored in O(n²) overall.
class PairSums {
 public:
  explicit PairSums(const std::vector<double>& v) : n_(v.size() + 1), p_(n_ * n_, 0.0) {
    for (size_t a = 0; a < v.size(); ++a)
      for (size_t b = 0; b < v.size(); ++b)
        p_[(a + 1) * n_ + b + 1] =
            p_[a * n_ + b + 1] + p_[(a + 1) * n_ + b] - p_[a * n_ + b] + std::abs(v[a] - v[b]);
  }
  // Σ |v_i − v_j| for i in [a, b), j in [c, d).
  double sum(size_t a, size_t b, size_t c, size_t d) const {
    return p_[b * n_ + d] - p_[a * n_ + d] - p_[b * n_ + c] + p_[a * n_ + c];
  }

 private:
  size_t n_;
  std::vector<double> p_;
};

// The best split of the segment [begin, end): the paper's search over tau (the first index
// of the new level) and kappa (the end of the right sample, so a level that comes back
// later does not hide the change), with left X = [begin, tau), right Y = [tau, kappa):
//   Q̂ = mn/(m+n) · (2/(mn) Σ|x−y| − 1/C(m,2) Σ_{i<k}|x_i−x_k| − 1/C(n,2) Σ_{j<k}|y_j−y_k|).
Split best_split(const PairSums& d, size_t begin, size_t end, size_t min_segment) {
  Split best;
  for (size_t tau = begin + min_segment; tau + min_segment <= end; ++tau) {
    double m = static_cast<double>(tau - begin);
    double within_left = d.sum(begin, tau, begin, tau) / 2;
    for (size_t kappa = tau + min_segment; kappa <= end; ++kappa) {
      double n = static_cast<double>(kappa - tau);
      double between = d.sum(begin, tau, tau, kappa);
      double within_right = d.sum(tau, kappa, tau, kappa) / 2;
      double e = 2 * between / (m * n) - within_left / (m * (m - 1) / 2) - within_right / (n * (n - 1) / 2);
      double q = m * n / (m + n) * e;
      if (q > best.q) best = {tau, q};
    }
  }
  return best;
}

// The strongest split over all segments (bounds: sorted cut indices, 0 and n included).
Split strongest(const std::vector<double>& v, const std::vector<size_t>& bounds, size_t min_segment) {
  PairSums d(v);
  Split best;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    Split b = best_split(d, bounds[s], bounds[s + 1], min_segment);
    if (b.q > best.q) best = b;
  }
  return best;
}

// The permutation test's p-value for `observed`: the share of series shuffled within their
// segments whose strongest split is at least as strong. Stops as soon as the answer can no
// longer be below `max_p` (most rounds on a flat series end after a few shuffles).
double p_value(const std::vector<double>& series, const std::vector<size_t>& bounds, double observed,
               const ChangePointOptions& o, SplitMix64& rng) {
  std::vector<double> shuffled = series;
  size_t at_least = 0;
  for (size_t r = 0; r < o.permutations; ++r) {
    for (size_t s = 0; s + 1 < bounds.size(); ++s)
      for (size_t i = bounds[s + 1] - 1; i > bounds[s]; --i)
        std::swap(shuffled[i], shuffled[bounds[s] + rng.below(i - bounds[s] + 1)]);
    // Ties (a constant series: every Q̂ is 0) count as "as strong".
    if (strongest(shuffled, bounds, o.min_segment).q >= observed - 1e-12 * std::abs(observed)) ++at_least;
    if (static_cast<double>(at_least + 1) / static_cast<double>(o.permutations + 1) >= o.max_p_value)
      return 1.0;  // cannot be significant any more
  }
  return static_cast<double>(at_least + 1) / static_cast<double>(o.permutations + 1);
}

}  // namespace

std::vector<ChangePoint> find_change_points(const std::vector<double>& series,
                                            const ChangePointOptions& options) {
  ChangePointOptions o = options;
  o.min_segment = std::max<size_t>(o.min_segment, 2);
  SplitMix64 rng(o.seed);
  std::vector<size_t> bounds = {0, series.size()};
  std::vector<ChangePoint> found;
  for (;;) {
    Split s = strongest(series, bounds, o.min_segment);
    if (!std::isfinite(s.q)) break;  // no segment is long enough to split
    double p = p_value(series, bounds, s.q, o, rng);
    if (p >= o.max_p_value) break;
    found.push_back({s.at, p, s.q});
    bounds.insert(std::upper_bound(bounds.begin(), bounds.end(), s.at), s.at);
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.index < b.index; });
  return found;
}

}  // namespace loadlab::controller
