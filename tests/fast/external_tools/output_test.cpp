// Each parser on each recorded output (figures copied from the recorded text), the failures,
// and garbage. Fixtures: tests/data/clients (recorded by record.sh, or derived from a tool's
// source where the .meta.txt says so).
#include "loadlab/clients/output.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixture.hpp"

namespace loadlab::clients {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::recorded;

ParsedRun parse(Tool tool, const std::string& name) {
  auto r = recorded(std::string(tool_name(tool)), name);
  return parse_output(tool, r.out, r.err, r.exit_code);
}

std::string failure(Tool tool, const std::string& name) {
  auto r = recorded(std::string(tool_name(tool)), name);
  try {
    (void)parse_output(tool, r.out, r.err, r.exit_code);
  } catch (const ToolFailed& e) {
    return e.what();
  }
  ADD_FAILURE() << name << " parsed as a result";
  return "";
}

std::map<std::string, uint64_t> kinds(const v1::LoadResult& r) {
  return {r.error_kinds().begin(), r.error_kinds().end()};
}

// ---- wrk ----

TEST(WrkOutput, WithoutLatencyFlagHasNoPercentiles) {
  auto p = parse(Tool::kWrk, "normal");
  const auto& r = p.result;
  EXPECT_EQ(p.format, "wrk");
  EXPECT_EQ(r.threads(), 1u);
  EXPECT_EQ(r.connections(), 4u);
  EXPECT_EQ(r.requests(), 7115u);
  EXPECT_EQ(r.responses(), 7115u);
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_TRUE(r.error_kinds().empty());
  EXPECT_DOUBLE_EQ(r.duration_s(), 2.0);
  EXPECT_DOUBLE_EQ(r.qps(), 7115 / 2.0);
  EXPECT_EQ(r.bytes_read(), 768420u);  // 750.41KB
  EXPECT_DOUBLE_EQ(r.latency().mean_us(), 1160);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 7220);
  for (const char* f : {"latency.p50_us", "latency.p90_us", "latency.p99_us", "latency.p999_us",
                        "latency.min_us", "status", "histogram", "connect"})
    EXPECT_THAT(p.unavailable, Contains(f));
  EXPECT_THAT(p.unavailable, Not(Contains("latency.mean_us")));
  EXPECT_EQ(std::vector<std::string>(r.unavailable().begin(), r.unavailable().end()), p.unavailable);
}

TEST(WrkOutput, LatencyDistribution) {
  auto p = parse(Tool::kWrk, "latency");
  const auto& r = p.result;
  EXPECT_EQ(r.threads(), 2u);
  EXPECT_EQ(r.requests(), 7076u);
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 1070);
  EXPECT_DOUBLE_EQ(r.latency().p90_us(), 1120);
  EXPECT_DOUBLE_EQ(r.latency().p99_us(), 3850);
  EXPECT_DOUBLE_EQ(r.latency().mean_us(), 1170);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 6750);
  EXPECT_EQ(r.bytes_read(), 764211u);  // 746.30KB
  EXPECT_FALSE(r.latency_corrected());
  EXPECT_THAT(p.unavailable, Not(Contains("latency.p50_us")));
  EXPECT_THAT(p.unavailable, Contains("latency.p999_us"));
}

TEST(WrkOutput, Every503IsAnError) {
  auto r = parse(Tool::kWrk, "status503").result;
  EXPECT_EQ(r.requests(), 1786u);
  EXPECT_EQ(r.errors(), 1786u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"status", 1786}}));
}

TEST(WrkOutput, ConnectionCloseRun) {
  auto r = parse(Tool::kWrk, "close").result;
  EXPECT_EQ(r.requests(), 1482u);
  EXPECT_DOUBLE_EQ(r.latency().p99_us(), 5950);
}

TEST(WrkOutput, ResponsesSlowerThanTheTimeoutAreTimeouts) {
  auto p = parse(Tool::kWrk, "timeout");
  const auto& r = p.result;
  EXPECT_EQ(r.requests(), 2u);
  EXPECT_EQ(r.errors(), 2u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"timeout", 2}}));
  EXPECT_DOUBLE_EQ(r.duration_s(), 3.01);
  EXPECT_EQ(r.bytes_read(), 216u);
  // wrk records no latency beyond its timeout: its zeros are no figure.
  EXPECT_THAT(p.unavailable, Contains("latency.mean_us"));
  EXPECT_THAT(p.unavailable, Contains("latency.p50_us"));
}

TEST(WrkOutput, RefusedAndBadFlagAreFailures) {
  EXPECT_THAT(failure(Tool::kWrk, "refused"), HasSubstr("unable to connect to 127.0.0.1:"));
  EXPECT_THAT(failure(Tool::kWrk, "refused"), HasSubstr("exit status 1"));
  EXPECT_THAT(failure(Tool::kWrk, "badflag"), HasSubstr("unrecognized option '--bogus'"));
}

TEST(WrkOutput, Wrk2HdrHistogram) {
  auto p = parse(Tool::kWrk, "wrk2-src-rate");
  const auto& r = p.result;
  EXPECT_EQ(p.format, "wrk2");
  EXPECT_TRUE(r.latency_corrected());
  EXPECT_EQ(r.threads(), 2u);
  EXPECT_EQ(r.connections(), 10u);
  EXPECT_EQ(r.requests(), 29952u);
  EXPECT_DOUBLE_EQ(r.duration_s(), 30);
  EXPECT_EQ(r.bytes_read(), 3250586u);  // 3.10MB
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 1050);
  EXPECT_DOUBLE_EQ(r.latency().p90_us(), 1610);
  EXPECT_DOUBLE_EQ(r.latency().p99_us(), 2410);
  EXPECT_DOUBLE_EQ(r.latency().p999_us(), 6030);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 9820);
  EXPECT_DOUBLE_EQ(r.latency().mean_us(), 1079);  // the spectrum's #[Mean, in ms with 3 decimals
  EXPECT_DOUBLE_EQ(r.latency().min_us(), 214);    // the spectrum's first row
  EXPECT_THAT(p.unavailable, Not(Contains("latency.p999_us")));
  EXPECT_THAT(p.unavailable, Contains("histogram"));
}

TEST(WrkOutput, MinutesSecondsAndEveryErrorLine) {
  auto r = parse(Tool::kWrk, "wrk-src-minutes").result;
  EXPECT_DOUBLE_EQ(r.duration_s(), 120);
  EXPECT_EQ(r.responses(), 76408u);
  EXPECT_EQ(r.requests(), 76408u + 12);
  EXPECT_EQ(r.errors(), 12u + 389 + 113);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"read", 12}, {"timeout", 389}, {"status", 113}}));
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 588420);
  EXPECT_DOUBLE_EQ(r.latency().p90_us(), 1.21e6);
  EXPECT_DOUBLE_EQ(r.latency().p99_us(), 1.9e6);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 1.99e6);
  EXPECT_EQ(r.bytes_read(), 26277315u);  // 25.06MB
}

// ---- hey ----

TEST(HeyOutput, RequestCount) {
  auto p = parse(Tool::kHey, "normal");
  const auto& r = p.result;
  EXPECT_EQ(p.format, "hey");
  EXPECT_EQ(r.requests(), 200u);
  EXPECT_EQ(r.responses(), 200u);
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_EQ(r.status().at(200), 200u);
  EXPECT_DOUBLE_EQ(r.duration_s(), 0.0573);
  EXPECT_DOUBLE_EQ(r.qps(), 200 / 0.0573);
  EXPECT_DOUBLE_EQ(r.latency().min_us(), 1000);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 1600);
  EXPECT_DOUBLE_EQ(r.latency().mean_us(), 1100);
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 1100);
  EXPECT_DOUBLE_EQ(r.latency().p90_us(), 1200);
  EXPECT_DOUBLE_EQ(r.latency().p99_us(), 1400);
  for (const char* f : {"latency.p999_us", "bytes_read", "threads", "connections", "histogram", "connect"})
    EXPECT_THAT(p.unavailable, Contains(f));
  EXPECT_THAT(p.unavailable, Not(Contains("status")));
}

TEST(HeyOutput, Duration) {
  auto r = parse(Tool::kHey, "duration").result;
  EXPECT_EQ(r.requests(), 6827u);
  EXPECT_DOUBLE_EQ(r.duration_s(), 2.0004);
  EXPECT_DOUBLE_EQ(r.latency().p99_us(), 1400);
}

TEST(HeyOutput, Every503IsAnErrorAndAnUnreachedPercentileIsNoFigure) {
  auto p = parse(Tool::kHey, "status503");
  const auto& r = p.result;
  EXPECT_EQ(r.requests(), 40u);
  EXPECT_EQ(r.errors(), 40u);
  EXPECT_EQ(r.status().at(503), 40u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"status", 40}}));
  // 40 requests never reach hey's 99 % rank: it prints "0% in 0.0000 secs".
  EXPECT_THAT(p.unavailable, Contains("latency.p99_us"));
  EXPECT_DOUBLE_EQ(r.latency().p90_us(), 1200);
}

TEST(HeyOutput, TimeoutsAreErrorsNotAFailure) {
  auto p = parse(Tool::kHey, "timeout");
  const auto& r = p.result;
  EXPECT_EQ(r.requests(), 4u);
  EXPECT_EQ(r.responses(), 0u);
  EXPECT_EQ(r.errors(), 4u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"timeout", 4}}));
  EXPECT_DOUBLE_EQ(r.duration_s(), 2.001);
  EXPECT_THAT(p.unavailable, Contains("latency.mean_us"));  // hey printed NaN
}

TEST(HeyOutput, RefusedAndBadFlagAreFailures) {
  EXPECT_THAT(failure(Tool::kHey, "refused"), HasSubstr("no response"));
  EXPECT_THAT(failure(Tool::kHey, "refused"), HasSubstr("connect: connection refused"));
  EXPECT_THAT(failure(Tool::kHey, "badflag"), HasSubstr("exit status 2"));
}

TEST(HeyOutput, OlderPrintfFormat) {
  auto p = parse(Tool::kHey, "hey-printf-src-errors");
  const auto& r = p.result;
  EXPECT_EQ(p.format, "hey-printf");
  EXPECT_EQ(r.responses(), 8892u);
  EXPECT_EQ(r.requests(), 8893u);
  EXPECT_EQ(r.errors(), 101u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"status", 100}, {"read", 1}}));
  EXPECT_EQ(r.status().at(200), 8792u);
  EXPECT_EQ(r.status().at(500), 100u);
  EXPECT_DOUBLE_EQ(r.duration_s(), 2.0112);
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 3400);
  EXPECT_DOUBLE_EQ(r.latency().p99_us(), 16700);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 31100);
}

// ---- h2load ----

TEST(H2loadOutput, RequestCount) {
  auto p = parse(Tool::kH2load, "normal");
  const auto& r = p.result;
  EXPECT_EQ(p.format, "h2load");
  EXPECT_EQ(r.threads(), 2u);
  EXPECT_EQ(r.connections(), 4u);
  EXPECT_EQ(r.requests(), 200u);
  EXPECT_EQ(r.responses(), 200u);
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_DOUBLE_EQ(r.duration_s(), 0.06241);
  EXPECT_EQ(r.bytes_read(), 21600u);
  EXPECT_DOUBLE_EQ(r.latency().min_us(), 1030);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 4640);
  EXPECT_DOUBLE_EQ(r.latency().mean_us(), 1230);
  EXPECT_DOUBLE_EQ(r.connect().min_us(), 45);
  EXPECT_DOUBLE_EQ(r.connect().max_us(), 204);
  for (const char* f :
       {"latency.p50_us", "latency.p90_us", "latency.p99_us", "latency.p999_us", "status", "histogram"})
    EXPECT_THAT(p.unavailable, Contains(f));
  EXPECT_THAT(p.unavailable, Not(Contains("connect")));
}

TEST(H2loadOutput, DurationWithWarmupCountsTheMainDurationOnly) {
  auto p = parse(Tool::kH2load, "duration");
  EXPECT_DOUBLE_EQ(p.result.duration_s(), 2.0);  // "finished in 3.00s" includes the 1 s warm-up
  EXPECT_EQ(p.result.requests(), 6766u);
  EXPECT_DOUBLE_EQ(p.result.qps(), 3383);
  EXPECT_THAT(p.unavailable, Contains("connect"));  // connected during warm-up: 0us
}

TEST(H2loadOutput, RpsRun) {
  auto r = parse(Tool::kH2load, "rps").result;
  EXPECT_EQ(r.requests(), 100u);
  EXPECT_DOUBLE_EQ(r.duration_s(), 0.98258);
}

TEST(H2loadOutput, Every503IsAnError) {
  auto r = parse(Tool::kH2load, "status503").result;
  EXPECT_EQ(r.requests(), 40u);
  EXPECT_EQ(r.responses(), 40u);
  EXPECT_EQ(r.errors(), 40u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"status", 40}}));
}

TEST(H2loadOutput, ConnectionCloseLosesTheByteCount) {
  auto p = parse(Tool::kH2load, "close");
  EXPECT_EQ(p.result.requests(), 40u);
  EXPECT_THAT(p.unavailable, Contains("bytes_read"));
}

TEST(H2loadOutput, TimeoutsAreErrorsNotAFailure) {
  auto r = parse(Tool::kH2load, "timeout").result;
  EXPECT_EQ(r.requests(), 4u);
  EXPECT_EQ(r.responses(), 0u);
  EXPECT_EQ(r.errors(), 4u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"timeout", 2}, {"errored", 2}}));
}

TEST(H2loadOutput, RefusedAndBadFlagAreFailures) {
  EXPECT_THAT(failure(Tool::kH2load, "refused"), HasSubstr("10 errored"));
  EXPECT_THAT(failure(Tool::kH2load, "badflag"), HasSubstr("unrecognized option '--bogus'"));
}

TEST(H2loadOutput, Version1_0Format) {
  auto p = parse(Tool::kH2load, "h2load-1.0-src");
  const auto& r = p.result;
  EXPECT_EQ(p.format, "h2load-1.0");
  EXPECT_EQ(r.threads(), 2u);
  EXPECT_EQ(r.connections(), 10u);
  EXPECT_EQ(r.requests(), 10000u);
  EXPECT_EQ(r.errors(), 50u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"status", 50}}));
  EXPECT_DOUBLE_EQ(r.duration_s(), 1.42);
  EXPECT_EQ(r.bytes_read(), 1107800u);
  EXPECT_DOUBLE_EQ(r.latency().min_us(), 312);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 18520);
  EXPECT_DOUBLE_EQ(r.connect().mean_us(), 233);
}

TEST(H2loadOutput, RecentTimingRunWithErrors) {
  auto r = parse(Tool::kH2load, "h2load-src-timing").result;
  EXPECT_DOUBLE_EQ(r.duration_s(), 3);
  EXPECT_EQ(r.requests(), 8616u);
  EXPECT_EQ(r.responses(), 8611u);
  EXPECT_EQ(r.errors(), 105u);
  EXPECT_EQ(kinds(r), (std::map<std::string, uint64_t>{{"status", 100}, {"timeout", 3}, {"errored", 2}}));
  EXPECT_EQ(r.bytes_read(), 930371u);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 50110);
}

// ---- failures common to all ----

TEST(Output, GarbageIsRejectedClearly) {
  for (Tool t : {Tool::kWrk, Tool::kHey, Tool::kH2load}) {
    for (const char* garbage : {"", "<html>502 Bad Gateway</html>\n", "Segmentation fault\n"}) {
      try {
        (void)parse_output(t, garbage, "", 0);
        ADD_FAILURE() << tool_name(t) << " accepted: " << garbage;
      } catch (const ToolFailed& e) {
        EXPECT_THAT(e.what(), HasSubstr(std::string(tool_name(t)) + " output not recognised"));
      }
    }
  }
}

TEST(Output, TruncatedOutputIsRejected) {
  auto wrk = recorded("wrk", "latency").out;
  EXPECT_THROW(parse_output(Tool::kWrk, wrk.substr(0, wrk.find("  7076 requests")), "", 0), ToolFailed);
  auto h2 = recorded("h2load", "normal").out;
  EXPECT_THROW(parse_output(Tool::kH2load, h2.substr(0, h2.find("status codes:")), "", 0), ToolFailed);
  auto bad = wrk;
  bad.replace(bad.find("746.30KB"), 8, "746.30XB");
  EXPECT_THROW(parse_output(Tool::kWrk, bad, "", 0), ToolFailed);
}

TEST(Output, KilledToolIsAFailure) {
  auto r = recorded("wrk", "latency");
  try {
    (void)parse_output(Tool::kWrk, r.out, "", -9);
    ADD_FAILURE();
  } catch (const ToolFailed& e) {
    EXPECT_THAT(e.what(), HasSubstr("killed by a signal"));
  }
}

}  // namespace
}  // namespace loadlab::clients
