#include "job_profile.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

grpc::Status check_profile_spec(const v1::ProfileSpec& spec, const std::string& field) {
  const auto hz = spec.frequency_hz();
  if (hz > static_cast<uint32_t>(limits::kMaxProfileHz))
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        field + ".frequency_hz: must be in 0..." + std::to_string(limits::kMaxProfileHz) +
                            " samples a second (0: not profiled), got " + std::to_string(hz));
  if (hz > 0 && spec.call_graph() != "fp" && spec.call_graph() != "dwarf")
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        field + ".call_graph: must be \"fp\" or \"dwarf\", got \"" + spec.call_graph() + "\"");
  return grpc::Status::OK;
}

v1::CpuProfile cpu_profile(const FoldedStacks& stacks, size_t max_bytes) {
  v1::CpuProfile p;
  const uint64_t samples = total_samples(stacks);
  p.set_samples(samples);
  p.set_rooted_pct(
      samples ? 100.0 * static_cast<double>(rooted_samples(stacks)) / static_cast<double>(samples) : 0);
  std::string text = folded_text(stacks);
  if (text.size() <= max_bytes) {
    p.set_folded(std::move(text));
    return p;
  }
  // The commonest stacks first, until the next would not fit.
  std::vector<std::pair<std::string, uint64_t>> by_count(stacks.begin(), stacks.end());
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  FoldedStacks kept;
  size_t bytes = 0;
  uint64_t dropped = 0;
  for (const auto& [stack, count] : by_count) {
    const size_t line = stack.size() + 2 + std::to_string(count).size();
    if (bytes + line <= max_bytes) {
      kept.emplace(stack, count);
      bytes += line;
    } else {
      dropped += count;
    }
  }
  p.set_folded(folded_text(kept));
  p.set_dropped_samples(dropped);
  return p;
}

JobProfile::JobProfile(const v1::ProfileSpec& spec, const v1::ProfilingSupport& support, std::string perf)
    : spec_(spec), support_(support), perf_(std::move(perf)) {}

JobProfile::~JobProfile() = default;

void JobProfile::start(const std::vector<pid_t>& pids) {
  std::lock_guard lock(mutex_);
  if (!asked() || started_) return;
  started_ = true;
  if (!support_.available()) {
    failure_ = support_.reason();
    return;
  }
  ProfileRequest request;
  request.pids = pids;
  request.frequency_hz = static_cast<int>(spec_.frequency_hz());
  request.call_graph = spec_.call_graph();
  try {
    recording_ = WindowProfile::start(request, std::filesystem::temp_directory_path(), perf_);
  } catch (const std::exception& e) {
    failure_ = e.what();
  }
}

void JobProfile::end_window() {
  std::lock_guard lock(mutex_);
  if (!recording_) return;
  try {
    recording_->end_recording();
  } catch (const std::exception& e) {
    failure_ = e.what();
    recording_.reset();
  }
}

std::optional<v1::CpuProfile> JobProfile::finish() {
  std::lock_guard lock(mutex_);
  if (!asked()) return std::nullopt;
  const bool started = std::exchange(started_, true);  // a window that opens later starts no perf
  if (!started) return unavailable("the measured window never opened");
  if (!recording_) return unavailable(failure_);
  try {
    v1::CpuProfile p = cpu_profile(recording_->stop(), static_cast<size_t>(limits::kMaxProfileBytes));
    recording_.reset();
    p.set_frequency_hz(spec_.frequency_hz());
    p.set_call_graph(spec_.call_graph());
    p.set_kernel(support_.kernel());
    return p;
  } catch (const std::exception& e) {
    recording_.reset();
    return unavailable(e.what());
  }
}

v1::CpuProfile JobProfile::unavailable(const std::string& why) const {
  component_logger("agent")->warn("profile unavailable: {}", why);
  v1::CpuProfile p;
  p.set_frequency_hz(spec_.frequency_hz());
  p.set_call_graph(spec_.call_graph());
  p.set_unavailable(why);
  return p;
}

}  // namespace loadlab::agent
