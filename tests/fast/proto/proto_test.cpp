// The protocol's JSON form and the histogram's wire form (proto/src).
#include <gtest/gtest.h>

#include "loadlab/proto/histogram_proto.hpp"
#include "loadlab/proto/json.hpp"

namespace loadlab::proto {
namespace {

TEST(ProtoJson, DefaultsArePrintedWithTheProtosFieldNames) {
  v1::Progress p;
  p.set_requests(7);
  std::string json = to_json(p);
  EXPECT_EQ(json,
            R"({"elapsed_s":0,"requests":"7","errors":"0","qps":0,"warmup":false,"latency_mean_ms":0})");
  v1::Progress back;
  ASSERT_NO_THROW(from_json(json, &back));
  EXPECT_EQ(back.requests(), 7u);
}

TEST(ProtoJson, AMistypedFieldIsAnErrorNotAZero) {
  v1::LoadEvent ev;
  EXPECT_THROW(from_json(R"({"result":{"requets":"100"}})", &ev), InputError);
  EXPECT_THROW(from_json(R"({"result":{"requests":"a hundred"}})", &ev), InputError);
  try {
    from_json("not json", &ev);
    FAIL() << "not json was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "loadlab.v1.LoadEvent");
  }
  ASSERT_NO_THROW(from_json(R"({"progress":{"requests":"7","qps":3.5}})", &ev));
  EXPECT_EQ(ev.progress().requests(), 7u);
}

TEST(HistogramProto, AHistogramFromAPeerIsCheckedBeforeItIsBuilt) {
  v1::Histogram p;
  Histogram h;
  p.set_highest_trackable(uint64_t{1} << 62);
  p.set_significant_digits(3);
  auto error_of = [&] {
    try {
      from_proto(p, &h);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of().find("highest_trackable"), std::string::npos);
  p.set_highest_trackable(60'000'000);
  auto* b = p.add_buckets();
  b->set_index(1u << 30);
  b->set_count(1);
  EXPECT_NE(error_of().find("out of range"), std::string::npos);
}

TEST(HistogramProto, RoundTripKeepsEveryBucket) {
  Histogram h;
  for (int v = 1; v < 100000; v += 7) h.record(v);
  v1::Histogram wire;
  to_proto(h, &wire);
  Histogram back;
  ASSERT_NO_THROW(from_proto(wire, &back));
  EXPECT_EQ(back.count(), h.count());
  for (double p : {50.0, 90.0, 99.0, 99.9})
    EXPECT_EQ(back.value_at_percentile(p), h.value_at_percentile(p)) << p;
  v1::Latency l;
  latency_of(h, &l);
  EXPECT_EQ(l.p99_us(), static_cast<double>(h.value_at_percentile(99)));
  EXPECT_EQ(l.min_us(), static_cast<double>(h.min()));
}

}  // namespace
}  // namespace loadlab::proto
