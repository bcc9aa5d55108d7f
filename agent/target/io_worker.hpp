#pragma once
// One io thread: its io_context and the count of requests its sessions answered.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <vector>

namespace loadlab::target {

// One cache line each, so the hot counters of different threads do not share one.
struct alignas(64) IoWorker {
  std::atomic<std::uint64_t> responses_sent{0};  // stats requests excluded
  boost::asio::io_context ioc{1};                // destroyed first: its sessions hold the counter
};

using IoWorkers = std::vector<std::unique_ptr<IoWorker>>;

// Requests answered so far, summed over io threads. Any thread.
inline std::uint64_t count_requests(const IoWorkers& workers) {
  std::uint64_t total = 0;
  for (const auto& worker : workers) total += worker->responses_sent.load(std::memory_order_relaxed);
  return total;
}

}  // namespace loadlab::target
