// The clock offset from NTP's four timestamps: the true offset lies within half the round
// trip of the sample used, whatever the one-way delays, and the least-delay sample is used.
#include "lab/clock_offset.hpp"

#include <gtest/gtest.h>

#include <random>

namespace loadlab::controller {
namespace {

// A probe sent at controller time `t1` to an agent whose clock is `offset` ahead, `out` ns on
// the way there, `hold` ns in the agent, `back` ns on the way back.
v1::ClockEcho echo(int64_t t1, int64_t offset, int64_t out, int64_t hold, int64_t back, int64_t* read) {
  v1::ClockEcho e;
  e.set_controller_ns(t1);
  e.set_received_ns(t1 + out + offset);
  e.set_sent_ns(t1 + out + hold + offset);
  *read = t1 + out + hold + back;
  return e;
}

TEST(ClockOffset, TheTrueOffsetIsWithinHalfTheRoundTripOfTheLeastDelayedSample) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> delay(10'000, 50'000'000);  // 10 µs to 50 ms, each way
  for (int64_t offset : {int64_t{0}, int64_t{200'000'000}, int64_t{-7'000'000'000'000}}) {
    ClockOffset c;
    EXPECT_FALSE(c.known());
    int64_t least = INT64_MAX;
    for (int i = 0; i < 8; ++i) {
      int64_t read = 0;
      const int64_t out = delay(rng), back = delay(rng);
      least = std::min(least, out + back);
      const auto e = echo(1'000'000'000 + i * 100'000'000, offset, out, 20'000, back, &read);
      c.add(e, read);
    }
    ASSERT_TRUE(c.known());
    EXPECT_EQ(c.samples(), 8u);
    EXPECT_EQ(c.round_trip_ns(), least);
    EXPECT_LE(std::abs(c.offset_ns() - offset), c.uncertainty_ns() + 1) << offset;
    EXPECT_EQ(c.to_controller(c.to_agent(123)), 123);
  }
}

TEST(ClockOffset, AnAsymmetricPathIsOffByItsAsymmetryAndSaysSo) {
  // 50 ms out, 1 ms back: the estimate is 24.5 ms off, and the uncertainty 25.5 ms covers it.
  ClockOffset c;
  int64_t read = 0;
  const auto slow = echo(0, 1'000'000, 50'000'000, 0, 1'000'000, &read);
  c.add(slow, read);
  EXPECT_EQ(c.offset_ns(), 1'000'000 + 24'500'000);
  EXPECT_EQ(c.uncertainty_ns(), 25'500'000);
  // A symmetric sample later, with a shorter round trip, replaces it.
  const auto fast = echo(100, 1'000'000, 200'000, 0, 200'000, &read);
  c.add(fast, read);
  EXPECT_EQ(c.offset_ns(), 1'000'000);
  EXPECT_EQ(c.uncertainty_ns(), 200'000);
  // An echo that is no answer (read before it was sent) is ignored.
  v1::ClockEcho bad;
  bad.set_controller_ns(1000);
  c.add(bad, 500);
  EXPECT_EQ(c.samples(), 2u);
}

// The offset keeps the least-delayed sample; the latest round trip is what a message takes
// now (a scheduled start's margin), however much longer than the least.
TEST(ClockOffset, TheLatestRoundTripIsKeptBesideTheLeast) {
  ClockOffset c;
  int64_t read = 0;
  auto first = echo(1'000'000'000, 5'000, 1'000'000, 10'000, 1'000'000, &read);
  c.add(first, read);
  EXPECT_EQ(c.round_trip_ns(), 2'000'000);
  EXPECT_EQ(c.last_round_trip_ns(), 2'000'000);
  auto slow = echo(2'000'000'000, 5'000, 60'000'000, 10'000, 40'000'000, &read);
  c.add(slow, read);
  EXPECT_EQ(c.round_trip_ns(), 2'000'000);
  EXPECT_EQ(c.last_round_trip_ns(), 100'000'000);
  EXPECT_EQ(c.offset_ns(), 5'000);
}

}  // namespace
}  // namespace loadlab::controller
