#include <gtest/gtest.h>

#include "loadlab/agent/load_result_json.hpp"
#include "loadlab/shared/histogram.hpp"

namespace loadlab::agent {
namespace {

v1::LoadSpec good() {
  v1::LoadSpec s;
  s.set_endpoint("127.0.0.1:8080");
  s.set_path("/test/fun");
  s.set_threads(4);
  s.set_connections(8);
  s.set_requests_per_thread(100);
  s.set_warmup_s(0.5);
  s.set_keep_alive(true);
  (*s.mutable_headers())["X-Test"] = "1";
  return s;
}

TEST(LoadSpec, CommandLineCarriesEveryField) {
  auto argv = load_command_line("/bin/loadlab-load", good());
  std::vector<std::string> want{"/bin/loadlab-load", "http://127.0.0.1:8080/test/fun", "-t", "4", "-c", "8", "-n", "100",
                                "--warmup", "0.5", "-H", "X-Test: 1", "--json-events"};
  EXPECT_EQ(argv, want);
  auto s = good();
  s.set_duration_s(2.5);
  s.set_keep_alive(false);
  argv = load_command_line("l", s);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-d"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--no-keepalive"), argv.end());
}

TEST(LoadSpec, ValidationNamesTheField) {
  auto s = good();
  EXPECT_EQ(validate_load_spec(s), "");
  s.set_endpoint("nohost");
  EXPECT_EQ(validate_load_spec(s).substr(0, 9), "endpoint:");
  s = good();
  s.set_connections(2);
  EXPECT_EQ(validate_load_spec(s).substr(0, 12), "connections:");
  s = good();
  s.clear_requests_per_thread();
  EXPECT_EQ(validate_load_spec(s).substr(0, 5), "stop:");
  s = good();
  (*s.mutable_headers())["Bad"] = "a\r\nInjected: 1";
  EXPECT_EQ(validate_load_spec(s), "headers/Bad: value must not contain CR or LF");
}

TEST(LoadSpec, ResultJsonBecomesTheProtoWithTheHistogram) {
  Histogram h;
  for (int v = 100; v < 200; ++v) h.record(v);
  nlohmann::json j = {{"event", "result"},   {"requests", 100}, {"errors", 2}, {"duration_s", 0.5}, {"qps", 200.0},
                      {"threads", 1},        {"connections", 1}, {"bytes_read", 1234},
                      {"latency_us", {{"p50", 150}, {"p90", 190}, {"p99", 199}, {"p999", 199}, {"max", 199}, {"mean", 149.5}, {"min", 100}}},
                      {"status", {{"200", 98}, {"500", 2}}},
                      {"errors_by_kind", {{"status", 2}, {"read", 0}}},
                      {"histogram", h.to_json()}};
  v1::LoadResult r;
  ASSERT_EQ(load_result_from_json(j, &r), "");
  EXPECT_EQ(r.requests(), 100u);
  EXPECT_EQ(r.status().at(500), 2u);
  EXPECT_EQ(r.error_kinds().at("status"), 2u);
  EXPECT_FALSE(r.error_kinds().contains("read"));
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 150);
  uint64_t total = 0;
  for (auto& b : r.histogram().buckets()) total += b.count();
  EXPECT_EQ(total, 100u);
  j.erase("histogram");
  EXPECT_NE(load_result_from_json(j, &r), "");
}

}  // namespace
}  // namespace loadlab::agent
