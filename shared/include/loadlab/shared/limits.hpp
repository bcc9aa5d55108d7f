#pragma once
// Limits that every edge enforces alike: the scenario checker, the agent and the load
// worker read them from here, so an input one of them accepts is never refused by another.
namespace loadlab::limits {

// Open loop (requests per second a load thread paces). Below the minimum a slot is over
// 16 minutes away; above the maximum one every 100 ns, more than a thread can send.
inline constexpr double kMinRatePerThread = 0.001;
inline constexpr double kMaxRatePerThread = 1e7;

}  // namespace loadlab::limits
