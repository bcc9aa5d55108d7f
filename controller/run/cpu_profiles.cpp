#include "run/cpu_profiles.hpp"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "github.com/google/pprof/proto/profile.pb.h"
#include "loadlab/shared/logging.hpp"
#include "results/quality_flags.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

fs::path next_profile_stem(const std::string& dir, const std::string& key,
                           const std::vector<std::string>& suffixes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string name = key;
  std::replace(name.begin(), name.end(), '/', '_');
  for (int n = 1;; ++n) {
    const fs::path stem = fs::path(dir) / (name + "." + std::to_string(n));
    if (std::none_of(suffixes.begin(), suffixes.end(),
                     [&](const std::string& s) { return fs::exists(stem.string() + s, ec); }))
      return stem;
  }
}

namespace pprof_file {

// The index of `s` in the profile's string table (pprof: entry 0 is "").
class Strings {
 public:
  explicit Strings(perftools::profiles::Profile& p) : p_(p) { index(""); }
  int64_t index(const std::string& s) {
    auto [it, added] = ids_.emplace(s, static_cast<int64_t>(ids_.size()));
    if (added) p_.add_string_table(s);
    return it->second;
  }

 private:
  perftools::profiles::Profile& p_;
  std::map<std::string, int64_t> ids_;
};

// gzip's framing of `data` (zlib's deflate with a gzip header: window bits 15 + 16); empty on
// failure.
std::string gzip(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

}  // namespace pprof_file

std::string pprof_gzip(const FoldedStacks& stacks, double ns_per_sample, double window_s) {
  perftools::profiles::Profile p;
  pprof_file::Strings strings(p);
  for (auto [type, unit] : {std::pair{"samples", "count"}, std::pair{"cpu", "nanoseconds"}}) {
    auto* t = p.add_sample_type();
    t->set_type(strings.index(type));
    t->set_unit(strings.index(unit));
  }
  p.mutable_period_type()->set_type(strings.index("cpu"));
  p.mutable_period_type()->set_unit(strings.index("nanoseconds"));
  p.set_period(static_cast<int64_t>(ns_per_sample));
  p.set_duration_nanos(static_cast<int64_t>(window_s * 1e9));
  p.add_comment(
      strings.index("cpu: the window's CPU time as the agent measured it, shared among the samples"));
  std::map<std::string, uint64_t> location_of;  // a frame's name → its location id (= its function id)
  for (const auto& [stack, count] : stacks) {
    auto* sample = p.add_sample();
    std::vector<uint64_t> ids;  // root first
    for (size_t at = 0; at <= stack.size();) {
      const size_t end = std::min(stack.find(';', at), stack.size());
      const std::string frame = stack.substr(at, end - at);
      at = end + 1;
      auto [it, added] = location_of.emplace(frame, location_of.size() + 1);
      if (added) {
        auto* f = p.add_function();
        f->set_id(it->second);
        f->set_name(strings.index(frame));
        auto* l = p.add_location();
        l->set_id(it->second);
        l->add_line()->set_function_id(it->second);
      }
      ids.push_back(it->second);
    }
    for (auto id = ids.rbegin(); id != ids.rend(); ++id) sample->add_location_id(*id);  // leaf first
    sample->add_value(static_cast<int64_t>(count));
    sample->add_value(static_cast<int64_t>(static_cast<double>(count) * ns_per_sample));
  }
  return pprof_file::gzip(p.SerializeAsString());
}

bool write_profile_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
  if (out.flush()) return true;
  component_logger("controller")->warn("cannot write {}: the profile is not kept", file.string());
  return false;
}

namespace pprof_file {

// A side's profile beside its folded stacks as pprof: each sample worth the window's measured
// CPU time ÷ the samples (1 / frequency where none was measured).
void write_pprof(const v1::Usage& usage, const fs::path& file) {
  const auto& p = usage.profile();
  const FoldedStacks stacks = parse_folded(p.folded());
  const uint64_t samples = p.samples() > 0 ? p.samples() : total_samples(stacks);
  const double cpu_ns = usage.cpu_pct() / 100 * usage.window_s() * 1e9;
  const double per_sample = cpu_ns > 0 && samples > 0 ? cpu_ns / static_cast<double>(samples)
                                                      : 1e9 / std::max<uint32_t>(p.frequency_hz(), 1);
  const std::string gz = pprof_gzip(stacks, per_sample, usage.window_s());
  if (gz.empty() || !write_profile_file(file, gz))
    component_logger("controller")
        ->warn("cannot write {}: no pprof profile beside the folded stacks", file.string());
}

}  // namespace pprof_file

void keep_cpu_profiles(const Cell& c, const std::string& profile_dir, v1::Repetition& r) {
  if (!c.profile) return;
  if (std::find(r.flags().begin(), r.flags().end(), flag_text(QualityFlag::kProfiled)) == r.flags().end())
    r.add_flags(flag_text(QualityFlag::kProfiled));
  for (auto& part : *r.mutable_load_parts()) part.mutable_client()->mutable_profile()->clear_folded();
  for (auto* usage : {r.mutable_server(), r.mutable_client()})
    if (!usage->has_profile())  // an agent from before profiles drops the spec's
      usage->mutable_profile()->set_unavailable(
          "the agent sent no profile (a loadlab-agent older than profiles)");
  const fs::path stem = profile_dir.empty()
                            ? fs::path()
                            : next_profile_stem(profile_dir, c.key(), {".server.folded", ".client.folded"});
  for (auto [usage, side] :
       {std::pair{r.mutable_server(), ".server"}, std::pair{r.mutable_client(), ".client"}}) {
    v1::CpuProfile& p = *usage->mutable_profile();
    const fs::path file = stem.string() + side + ".folded";
    if (!p.folded().empty() && !profile_dir.empty() && write_profile_file(file, p.folded())) {
      p.set_file((fs::path(profile_dir).filename() / file.filename()).string());
      pprof_file::write_pprof(*usage, stem.string() + side + ".pb.gz");
    }
    p.clear_folded();
  }
}

}  // namespace loadlab::controller
