#pragma once
// A set of CPUs in the kernel's list format ("0-3,8,10-11": Cpus_allowed_list, cpuset.cpus,
// taskset -c), as scenarios, specs and results write it. Parsing is strict: ascending or
// not, ranges low-high, no spaces, every CPU below kMaxCpus.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loadlab {

class CpuList {
 public:
  static constexpr uint32_t kMaxCpus = 4096;

  CpuList() = default;
  // nullopt for text that is not a non-empty list of CPUs below kMaxCpus.
  [[nodiscard]] static std::optional<CpuList> parse(std::string_view text);
  // The CPUs 0..n-1.
  static CpuList first(uint32_t n);

  bool empty() const { return cpus_.empty(); }
  uint32_t size() const { return static_cast<uint32_t>(cpus_.size()); }
  const std::vector<uint32_t>& cpus() const { return cpus_; }  // ascending, distinct
  bool contains(uint32_t cpu) const;
  bool subset_of(const CpuList& other) const;
  bool intersects(const CpuList& other) const;
  CpuList united(const CpuList& other) const;
  void add(uint32_t cpu);
  // The canonical text: ascending, runs of 3 or more as ranges ("0-2,5,7-8" gives "0-2,5,7,8").
  std::string to_string() const;
  bool operator==(const CpuList& o) const { return cpus_ == o.cpus_; }
  bool operator!=(const CpuList& o) const { return cpus_ != o.cpus_; }

 private:
  std::vector<uint32_t> cpus_;
};

}  // namespace loadlab
