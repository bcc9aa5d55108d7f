#pragma once
// Behaviour knobs of the target, as given on the command line and per request in
// `x-loadlab-*` headers: their parsing (one syntax for both places) and the delay's sampling.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "loadlab/shared/limits.hpp"

namespace loadlab::target {

inline constexpr double kMaxDelayMs = limits::kMaxDelayMs;
inline constexpr std::uint64_t kMaxBodySize = limits::kMaxResponseBodyBytes;
inline constexpr std::uint64_t kMaxWorkUs = limits::kMaxWorkUs;
inline constexpr std::uint64_t kMaxRequestWorkUs = limits::kMaxRequestWorkUs;
inline constexpr unsigned kMinStatus = 200;
inline constexpr unsigned kMaxStatus = 599;

// How long to wait before answering: `D` (fixed), `uniform:A-B` or `exp:MEAN`, in ms.
struct DelaySpec {
  enum class Kind { fixed, uniform, exponential };
  Kind kind = Kind::fixed;
  double a_ms = 0;  // fixed: the delay; uniform: low end; exponential: the mean
  double b_ms = 0;  // uniform: high end
  bool zero() const { return kind != Kind::uniform ? a_ms == 0 : b_ms == 0; }
};

// A small, fast generator per session (splitmix64): delays need no cryptographic quality.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform01();  // in [0, 1)

 private:
  std::uint64_t state_;
};

// One sample of `spec`; exponential samples are capped at kMaxDelayMs.
std::chrono::nanoseconds sample_delay(const DelaySpec& spec, Random& random);

// Parsers return nullopt on a bad value; `expected_*` say what is allowed, for the messages.
[[nodiscard]] std::optional<DelaySpec> parse_delay(std::string_view text);
std::optional<std::uint64_t> parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max);
// A plain decimal number ("12", "1.5"; no sign, exponent, inf or nan) in 0..max.
[[nodiscard]] std::optional<double> parse_fixed(std::string_view text, double max);
[[nodiscard]] std::optional<double> parse_ms(std::string_view text);  // a finite number in 0..kMaxDelayMs
// CPU work in us, 0..max_us, fractions allowed (to the ns: "1.5" is 1500 ns).
[[nodiscard]] std::optional<std::chrono::nanoseconds> parse_work_us(std::string_view text,
                                                                    std::uint64_t max_us);

std::string expected_delay();  // "expected D, uniform:A-B or exp:MEAN in ms (0..60000)"
std::string expected_range(std::uint64_t min, std::uint64_t max);
std::string expected_work_us(std::uint64_t max_us);  // "expected us in 0..N (fractions allowed)"

// The per-request overrides, from `x-loadlab-*` headers; unset = use the server's default.
struct RequestKnobs {
  std::optional<DelaySpec> delay;
  std::optional<std::uint64_t> body_size;
  std::optional<unsigned> status;
  std::optional<std::chrono::nanoseconds> work;  // x-loadlab-work-us
  std::string error;  // non-empty: a header had a bad value; this says which and why

  bool any() const { return delay || body_size || status || work || !error.empty(); }
  // Applies header `name` (any case) if it is a knob header; false if it is not one.
  bool apply(std::string_view name, std::string_view value);
};

}  // namespace loadlab::target
