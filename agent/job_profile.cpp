#include "job_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>
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
  if (hz > 0 && spec.call_graph() != "fp" && spec.call_graph() != "dwarf" && spec.call_graph() != "auto")
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        field + ".call_graph: must be \"auto\", \"fp\" or \"dwarf\", got \"" + spec.call_graph() + "\"");
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

std::pair<std::string, std::string> choose_call_graph(const FoldedStacks& probe, double probe_s) {
  constexpr uint64_t kMinSamples = kProbeSamples;
  constexpr double kWholePct = 90;
  const uint64_t samples = total_samples(probe);
  const std::string probe_text = fmt::format("a {:.2f} s probe", probe_s);
  if (samples < kMinSamples)
    return {"dwarf",
            fmt::format("dwarf: {} saw {} samples, too few to judge frame pointers", probe_text, samples)};
  // Floored, so that what is said never rounds up to the bar it missed.
  const double whole =
      std::floor(100.0 * static_cast<double>(rooted_samples(probe)) / static_cast<double>(samples));
  const std::string seen = fmt::format(
      "{:.0f} % of the {} frame-pointer stacks of {} reach their thread's start", whole, samples, probe_text);
  if (whole >= kWholePct) return {"fp", "fp: " + seen};
  return {"dwarf", fmt::format("dwarf: only {} (fp needs {:.0f} %)", seen, kWholePct)};
}

JobProfile::JobProfile(const v1::ProfileSpec& spec, const v1::ProfilingSupport& support, std::string perf,
                       std::function<bool()> cancelled)
    : spec_(spec),
      support_(support),
      perf_(std::move(perf)),
      cancelled_(std::move(cancelled)),
      call_graph_(spec.call_graph()) {}

JobProfile::~JobProfile() {
  std::lock_guard lock(mutex_);
  window_ended_ = true;  // a probe still running starts no recording; probe_ is waited for after
}

void JobProfile::start(const std::vector<pid_t>& pids) {
  std::lock_guard lock(mutex_);
  if (!asked() || started_) return;
  started_ = true;
  if (!support_.available()) {
    failure_ = support_.reason();
    return;
  }
  if (spec_.call_graph() == "auto")
    probe_ = std::async(std::launch::async, [this, pids] { probe_then_record(pids); });
  else
    record(pids, spec_.call_graph());
}

void JobProfile::record(const std::vector<pid_t>& pids, const std::string& call_graph) {
  ProfileRequest request;
  request.pids = pids;
  request.frequency_hz = static_cast<int>(spec_.frequency_hz());
  request.call_graph = call_graph;
  request.cancelled = cancelled_;
  try {
    recording_ = WindowProfile::start(request, std::filesystem::temp_directory_path(), perf_);
  } catch (const std::exception& e) {
    failure_ = e.what();
  }
}

FoldedStacks JobProfile::probe(const std::vector<pid_t>& pids, std::chrono::milliseconds& took) {
  ProfileRequest request;
  request.pids = pids;
  request.frequency_hz = static_cast<int>(spec_.frequency_hz());
  request.call_graph = "fp";
  request.cancelled = cancelled_;
  FoldedStacks stacks;
  took = std::chrono::milliseconds(0);
  for (auto length = kUnwindProbe; length <= 4 * kUnwindProbe; length *= 2) {
    request.duration = length;
    for (auto& [stack, count] : profile_processes(request, std::filesystem::temp_directory_path(), perf_))
      stacks[stack] += count;
    took += length;
    std::lock_guard lock(mutex_);
    if (total_samples(stacks) >= kProbeSamples || window_ended_) break;
  }
  return stacks;
}

void JobProfile::probe_then_record(const std::vector<pid_t>& pids) {
  FoldedStacks stacks;
  std::chrono::milliseconds took{0};
  std::string failure;
  try {
    stacks = probe(pids, took);
  } catch (const std::exception& e) {
    failure = std::string("the unwinding probe failed: ") + e.what();
  }
  std::lock_guard lock(mutex_);
  if (!failure.empty()) {
    failure_ = failure;
    return;
  }
  std::tie(call_graph_, probe_note_) = choose_call_graph(stacks, std::chrono::duration<double>(took).count());
  if (call_graph_ == "fp") probe_stacks_ = std::move(stacks);
  if (window_ended_) {  // a window shorter than the probe: what the probe kept, if anything
    if (probe_stacks_.empty())
      failure_ = "the window ended during the unwinding probe (" + probe_note_ + "): nothing was recorded";
    return;
  }
  record(pids, call_graph_);
}

void JobProfile::end_window() {
  std::lock_guard lock(mutex_);
  window_ended_ = true;
  if (!recording_) return;
  try {
    recording_->end_recording();
  } catch (const std::exception& e) {
    failure_ = e.what();
    recording_.reset();
  }
}

std::optional<v1::CpuProfile> JobProfile::finish() {
  std::future<void> probe;
  {
    std::lock_guard lock(mutex_);
    if (!asked()) return std::nullopt;
    const bool started = std::exchange(started_, true);  // a window that opens later starts no perf
    if (!started) return unavailable("the measured window never opened");
    window_ended_ = true;  // a probe still running starts no recording
    probe = std::move(probe_);
  }
  if (probe.valid()) probe.wait();  // without the lock, which the probe takes to record
  std::lock_guard lock(mutex_);
  return fold();
}

v1::CpuProfile JobProfile::fold() {
  if (!recording_ && probe_stacks_.empty()) return unavailable(failure_);
  try {
    FoldedStacks stacks = std::move(probe_stacks_);
    if (recording_)
      for (auto& [stack, count] : recording_->stop()) stacks[stack] += count;
    recording_.reset();
    v1::CpuProfile p = cpu_profile(stacks, static_cast<size_t>(limits::kMaxProfileBytes));
    p.set_frequency_hz(spec_.frequency_hz());
    p.set_call_graph(call_graph_);
    p.set_call_graph_probe(probe_note_);
    p.set_kernel(support_.kernel());
    if (!failure_.empty()) p.set_unavailable(failure_);  // the probe's samples only: in part
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
  if (call_graph_ != "auto") p.set_call_graph(call_graph_);  // "auto": the probe chose nothing
  p.set_call_graph_probe(probe_note_);
  p.set_unavailable(why);
  return p;
}

}  // namespace loadlab::agent
