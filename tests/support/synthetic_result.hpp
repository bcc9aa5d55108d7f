#pragma once
// result.json documents made up for tests of what reads runs back (history, compare):
// cells built as the loadlab.v1.CellResult messages they are, printed in the proto JSON form.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadlab/proto/json.hpp"
#include "loadlab/v1/result.pb.h"

namespace loadlab::testing {

struct SyntheticCell {
  std::string key;
  std::vector<double> qps;  // one repetition each
  bool ok = true;
  double p99_us = 2000;
  std::string target_commit;  // a target built from a commit: every repetition's
};

inline v1::CellResult synthetic_cell(const SyntheticCell& c) {
  v1::CellResult r;
  r.mutable_cell()->set_key(c.key);
  r.set_ok(c.ok);
  if (!c.ok) r.set_error("measure: the target stopped answering");
  for (double q : c.qps) {
    auto* rep = r.add_repetitions();
    rep->set_qps(q);
    rep->set_target_commit(c.target_commit);
    rep->set_requests(static_cast<uint64_t>(q * 10));
    rep->set_duration_s(10);
    rep->mutable_latency()->set_p50_us(c.p99_us / 4);
    rep->mutable_latency()->set_p90_us(c.p99_us / 2);
    rep->mutable_latency()->set_p99_us(c.p99_us);
    rep->mutable_latency()->set_p999_us(c.p99_us * 2);
    rep->mutable_latency()->set_max_us(c.p99_us * 4);
    rep->mutable_server()->set_cpu_pct(150);
    rep->mutable_server()->set_rss_kb_peak(9000);
    rep->mutable_client()->set_cpu_pct(80);
    rep->mutable_client()->set_rss_kb_peak(5000);
  }
  if (!c.qps.empty()) {
    r.set_qps_min(*std::min_element(c.qps.begin(), c.qps.end()));
    r.set_qps_max(*std::max_element(c.qps.begin(), c.qps.end()));
  }
  return r;
}

// A run of scenario `scenario` started at `started_at` ("2024-05-01T02:00:00Z"), finished
// unless `finished` is false, from scenario commit `commit`, on one agent "local".
inline nlohmann::json synthetic_result(const std::string& scenario, const std::string& started_at,
                                       const std::string& commit, const std::vector<SyntheticCell>& cells,
                                       bool finished = true) {
  nlohmann::json j = {
      {"loadlab_version", "0.1.0"},
      {"scenario_path", scenario + ".json"},
      {"scenario_file",
       {{"path", "/scenarios/" + scenario + ".json"},
        {"sha256", std::string(64, 'a')},
        {"git", {{"commit", commit}, {"dirty", false}, {"tree_dirty", true}}}}},
      {"scenario", {{"name", scenario}}},
      {"overrides", {"load.total_requests=1000"}},
      {"lab_path", ""},
      {"agents",
       {{{"name", "local"},
         {"address", "127.0.0.1:7700"},
         {"roles", {"target", "load"}},
         {"describe",
          {{"name", "local"},
           {"hostname", "lab-1"},
           {"cores", 8},
           {"cpu_model", "Test CPU 3000"},
           {"memory_bytes", "17179869184"},
           {"kernel", "6.1.0"},
           {"version", "0.1.0"}}},
         {"error", ""}}}},
      {"started_at", started_at},
      {"cells", nlohmann::json::array()},
  };
  if (finished) j["finished_at"] = started_at.substr(0, 11) + "03:00:00Z";
  for (auto& c : cells) j["cells"].push_back(nlohmann::json::parse(proto::to_json(synthetic_cell(c))));
  return j;
}

}  // namespace loadlab::testing
