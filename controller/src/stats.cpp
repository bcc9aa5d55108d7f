#include "loadlab/controller/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace loadlab::controller {

namespace {

// P(|Z| >= z) for a standard normal Z.
double two_sided(double z) { return std::erfc(std::abs(z) / std::sqrt(2.0)); }

}  // namespace

namespace {

// z of U_a (continuity corrected toward the mean), signed: negative when a ranks low; 0 when
// the samples cannot say (empty, or all tied).
double mann_whitney_z(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return 0;
  // Ranks of the pooled sample, ties at their mean rank.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n);
  for (double x : a) pooled.emplace_back(x, 0);
  for (double x : b) pooled.emplace_back(x, 1);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // mean of i+1..j
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rank_sum_a += rank;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  const double u = rank_sum_a - dn1 * (dn1 + 1) / 2;
  const double mean = dn1 * dn2 / 2;
  const double var = dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (var <= 0) return 0;  // every value equal
  const double d = std::max(0.0, std::abs(u - mean) - 0.5);
  return (u < mean ? -d : d) / std::sqrt(var);
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  return std::min(1.0, two_sided(mann_whitney_z(a, b)));
}

double mann_whitney_p_less(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1;
  return std::erfc(-mann_whitney_z(a, b) / std::sqrt(2.0)) / 2;  // P(Z <= z)
}

double mann_whitney_min_p(std::size_t n1, std::size_t n2) {
  std::vector<double> a(n1), b(n2);
  std::iota(a.begin(), a.end(), 0.0);
  std::iota(b.begin(), b.end(), static_cast<double>(n1));
  return mann_whitney_p_less(a, b);
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace loadlab::controller
