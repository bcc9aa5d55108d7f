#pragma once
// The statistics of a verdict: Mann-Whitney U (Wilcoxon rank-sum) between two samples. No
// Debian package offers a C++ rank-sum test, and it is thirty lines: written here, after
// Mann & Whitney (1947) with the normal approximation, tie correction and continuity
// correction (as SciPy's mannwhitneyu with method="asymptotic").
#include <cstddef>
#include <vector>

namespace loadlab::controller {

// The two-sided p-value of "a and b come from one distribution"; 1 when either is empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);
// The one-sided p-value against the alternative "a tends to be smaller than b".
double mann_whitney_p_less(const std::vector<double>& a, const std::vector<double>& b);

// The smallest one-sided p-value samples of these sizes can reach (all of one below all of
// the other), by the same approximation: below the test's level, the test can decide.
double mann_whitney_min_p(std::size_t n1, std::size_t n2);

double median(std::vector<double> v);  // NAN when empty

}  // namespace loadlab::controller
