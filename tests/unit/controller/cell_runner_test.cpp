#include "loadlab/controller/cell_runner.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "loadlab/controller/flags.hpp"
#include "loadlab/controller/provenance.hpp"
#include "loadlab/shared/histogram.hpp"

namespace loadlab::controller {
namespace {

Scenario scenario(const std::string& load) {
  return parse_scenario(nlohmann::json::parse(R"({"name": "s", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0], "threads": [5]}, "load": )" +
                                              load + "}"));
}

TEST(SplitLoad, ThreadsConnectionsAndTotalsSplitWithoutLoss) {
  auto s = scenario(R"({"total_requests": 1001, "connections_per_thread": 3})");
  auto cell = expand(s)[0];
  auto shares = split_load(s, cell, 2);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0].threads + shares[1].threads, 5u);
  EXPECT_EQ(shares[0].threads, 3u);
  EXPECT_EQ(shares[0].connections, 9u);
  EXPECT_EQ(*shares[0].total_requests + *shares[1].total_requests, 1001u);
  // Never more agents than threads.
  EXPECT_EQ(split_load(s, cell, 8).size(), 5u);
}

v1::LoadResult part(const std::vector<int64_t>& latencies, double qps) {
  Histogram h;
  for (auto v : latencies) h.record(v);
  v1::LoadResult r;
  r.set_requests(latencies.size());
  r.set_qps(qps);
  r.set_duration_s(1);
  (*r.mutable_status())[200] = latencies.size();
  auto* l = r.mutable_latency();
  l->set_min_us(static_cast<double>(h.min()));
  l->set_max_us(static_cast<double>(h.max()));
  l->set_mean_us(h.mean());
  auto* ph = r.mutable_histogram();
  ph->set_highest_trackable(static_cast<uint64_t>(h.highest_trackable()));
  ph->set_significant_digits(static_cast<uint32_t>(h.significant_digits()));
  for (auto& [i, n] : h.sparse()) {
    auto* b = ph->add_buckets();
    b->set_index(i);
    b->set_count(n);
  }
  return r;
}

TEST(MergeLoadResults, CountsAndRatesAddAndPercentilesComeFromAllBuckets) {
  std::mt19937 rng(3);
  std::vector<int64_t> a, b, all;
  for (int i = 0; i < 5000; ++i) a.push_back(std::uniform_int_distribution<int64_t>(100, 1000)(rng));
  for (int i = 0; i < 5000; ++i) b.push_back(std::uniform_int_distribution<int64_t>(5000, 9000)(rng));
  all = a;
  all.insert(all.end(), b.begin(), b.end());
  Histogram truth;
  for (auto v : all) truth.record(v);
  auto m = merge_load_results({part(a, 1000), part(b, 250)});
  EXPECT_EQ(m.requests, 10000u);
  EXPECT_DOUBLE_EQ(m.qps, 1250);
  EXPECT_EQ(m.status.at(200), 10000u);
  EXPECT_EQ(m.latency_us.p50, static_cast<double>(truth.value_at_percentile(50)));
  EXPECT_EQ(m.latency_us.p99, static_cast<double>(truth.value_at_percentile(99)));
  EXPECT_EQ(m.latency_us.max, static_cast<double>(truth.max()));
  EXPECT_EQ(m.latency_us.min, static_cast<double>(truth.min()));
  EXPECT_NEAR(m.latency_us.mean, truth.mean(), 1e-6);
  EXPECT_EQ(m.histogram["count"], 10000);
}

TEST(SaturationFlags, FlagAClientNearItsCoresAndABusyMachine) {
  RepResult r;
  r.target_agent = "srv";
  r.server.cpu_pct = 80;
  r.server.machine_cpu_pct = 85;
  LoadPart p;
  p.agent = "cli";
  p.client.cpu_pct = 190;
  p.client.machine_cpu_pct = 195;
  r.parts.push_back(p);
  EXPECT_EQ(saturation_flags(r, {{"srv", 4}, {"cli", 2}}), (std::vector<std::string>{"client-saturated"}));
  r.parts[0].client.cpu_pct = 50;
  r.parts[0].client.machine_cpu_pct = 60;
  r.server.machine_cpu_pct = 200;  // 120 % of someone else's work on the server's machine
  EXPECT_EQ(saturation_flags(r, {{"srv", 4}, {"cli", 2}}), (std::vector<std::string>{"busy-machine:srv"}));
  r.server.machine_cpu_pct = 90;
  EXPECT_TRUE(saturation_flags(r, {{"srv", 4}, {"cli", 2}}).empty());
}

TEST(Results, ACellSurvivesTheJournalRoundTrip) {
  CellResult c;
  c.cell.target = "b";
  c.cell.delay_ms = 5;
  RepResult r = merge_load_results({part({100, 200, 300}, 3)});
  r.server.cpu_pct = 12.5;
  r.server.series = {{0.1, 10, 1000}, {0.2, 15, 1100}};
  r.parts.push_back({"cli", 2, 4, 3, 0, 3.0, {}});
  r.flags = {"client-saturated"};
  r.attempts = 2;
  c.reps.push_back(r);
  auto j = to_json(c);
  auto back = cell_from_json(nlohmann::json::parse(j.dump()), c.cell);
  EXPECT_EQ(to_json(back), j);
}

TEST(Provenance, HashesTheFileAndFindsNoGitOutsideARepository) {
  char tmpl[] = "/tmp/loadlab-prov-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string file = dir + "/s.json";
  { std::ofstream(file) << "abc"; }
  auto j = file_provenance(file);
  EXPECT_EQ(j["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(j["git"].is_null());
  std::filesystem::remove_all(dir);
}

TEST(Provenance, NamesTheCommitAndWhetherTheFileOrTreeIsDirty) {
  char tmpl[] = "/tmp/loadlab-git-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string file = dir + "/s.json", other = dir + "/other.txt";
  { std::ofstream(file) << "{}"; }
  { std::ofstream(other) << "x"; }
  std::string git = "git -C " + dir + " -c user.name=t -c user.email=t@example.invalid ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git + "commit -qm init").c_str()), 0);
  auto clean = file_provenance(file);
  ASSERT_TRUE(clean["git"].is_object());
  EXPECT_EQ(clean["git"]["commit"].get<std::string>().size(), 40u);
  EXPECT_FALSE(clean["git"]["dirty"].get<bool>());
  EXPECT_FALSE(clean["git"]["tree_dirty"].get<bool>());
  { std::ofstream(other) << "changed"; }
  auto tree = file_provenance(file);
  EXPECT_FALSE(tree["git"]["dirty"].get<bool>());
  EXPECT_TRUE(tree["git"]["tree_dirty"].get<bool>());
  { std::ofstream(file) << "{\"changed\": 1}"; }
  EXPECT_TRUE(file_provenance(file)["git"]["dirty"].get<bool>());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loadlab::controller
