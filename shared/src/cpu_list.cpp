#include "loadlab/shared/cpu_list.hpp"

#include <algorithm>
#include <charconv>

namespace loadlab {

namespace {

std::optional<uint32_t> number(std::string_view s) {
  uint32_t v = 0;
  if (s.empty() || s.size() > 5) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v >= CpuList::kMaxCpus) return std::nullopt;
  return v;
}

}  // namespace

std::optional<CpuList> CpuList::parse(std::string_view text) {
  // The kernel ends its files with a newline; a scenario's text has none.
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  CpuList out;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = std::min(text.find(',', at), text.size());
    auto part = text.substr(at, comma - at);
    size_t dash = part.find('-');
    auto lo = number(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : number(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    for (uint32_t c = *lo; c <= *hi; ++c) out.add(c);
    at = comma + 1;
  }
  return out;
}

CpuList CpuList::first(uint32_t n) {
  CpuList out;
  for (uint32_t c = 0; c < n && c < kMaxCpus; ++c) out.cpus_.push_back(c);
  return out;
}

bool CpuList::contains(uint32_t cpu) const { return std::binary_search(cpus_.begin(), cpus_.end(), cpu); }

bool CpuList::subset_of(const CpuList& other) const {
  return std::includes(other.cpus_.begin(), other.cpus_.end(), cpus_.begin(), cpus_.end());
}

bool CpuList::intersects(const CpuList& other) const {
  return std::any_of(cpus_.begin(), cpus_.end(), [&](uint32_t c) { return other.contains(c); });
}

CpuList CpuList::united(const CpuList& other) const {
  CpuList out = *this;
  for (uint32_t c : other.cpus_) out.add(c);
  return out;
}

void CpuList::add(uint32_t cpu) {
  auto it = std::lower_bound(cpus_.begin(), cpus_.end(), cpu);
  if (it == cpus_.end() || *it != cpu) cpus_.insert(it, cpu);
}

std::string CpuList::to_string() const {
  std::string out;
  for (size_t i = 0; i < cpus_.size();) {
    size_t j = i;
    while (j + 1 < cpus_.size() && cpus_[j + 1] == cpus_[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j >= i + 2) {
      out += std::to_string(cpus_[i]) + "-" + std::to_string(cpus_[j]);
    } else {
      for (size_t k = i; k <= j; ++k) out += (k > i ? "," : "") + std::to_string(cpus_[k]);
    }
    i = j + 1;
  }
  return out;
}

}  // namespace loadlab
