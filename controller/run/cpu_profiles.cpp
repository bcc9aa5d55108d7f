#include "run/cpu_profiles.hpp"

#include <algorithm>
#include <fstream>

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

bool write_profile_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
  if (out.flush()) return true;
  component_logger("controller")->warn("cannot write {}: the profile is not kept", file.string());
  return false;
}

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
       {std::pair{r.mutable_server(), ".server.folded"}, std::pair{r.mutable_client(), ".client.folded"}}) {
    v1::CpuProfile& p = *usage->mutable_profile();
    const fs::path file = stem.string() + side;
    if (!p.folded().empty() && !profile_dir.empty() && write_profile_file(file, p.folded()))
      p.set_file((fs::path(profile_dir).filename() / file.filename()).string());
    p.clear_folded();
  }
}

}  // namespace loadlab::controller
