#pragma once
// One io thread: its io_context and the counters its sessions keep. Each counter is written by
// that thread only (relaxed), and read by any thread when summed (the stats endpoint, tests).
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loadlab::target {

// One cache line each, so the hot counters of different threads do not share one.
struct alignas(64) IoWorker {
  std::atomic<std::uint64_t> responses_sent{0};  // stats requests excluded
  std::atomic<std::uint64_t> connections{0};     // accepted, handed to this thread
  std::atomic<std::uint64_t> tls_handshakes{0};  // completed, full or resumed
  std::atomic<std::uint64_t> tls_resumed{0};     // of those, resumed sessions
  std::atomic<std::uint64_t> h2_connections{0};  // of `connections`, those speaking HTTP/2
  std::atomic<std::uint64_t> h2_streams{0};      // HTTP/2 responses sent, stats requests excluded
  std::atomic<std::uint64_t> h3_connections{0};  // QUIC handshakes completed (also in `connections`)
  std::atomic<std::uint64_t> h3_streams{0};      // HTTP/3 responses sent, stats requests excluded
  std::atomic<std::uint64_t> h3_resumed{0};      // of h3_connections, resumed TLS sessions
  std::atomic<std::uint64_t> h3_early_data{0};   // of h3_connections, those whose 0-RTT data was accepted
  boost::asio::io_context ioc{1};                // destroyed first: its sessions hold the counters
};

using IoWorkers = std::vector<std::unique_ptr<IoWorker>>;

// The counters of all io threads, summed: what GET /__loadlab/stats answers.
struct ServerStats {
  std::uint64_t requests = 0;  // responses sent, the stats endpoint's own excluded
  std::uint64_t connections = 0;
  std::uint64_t tls_handshakes = 0;
  std::uint64_t tls_resumed = 0;
  std::uint64_t h2_connections = 0;
  std::uint64_t h2_streams = 0;  // of `requests`, those answered over HTTP/2
  std::uint64_t h3_connections = 0;
  std::uint64_t h3_streams = 0;  // of `requests`, those answered over HTTP/3
  std::uint64_t h3_resumed = 0;
  std::uint64_t h3_early_data = 0;
};

// Any thread.
inline ServerStats count_stats(const IoWorkers& workers) {
  constexpr auto relaxed = std::memory_order_relaxed;
  ServerStats total;
  for (const auto& worker : workers) {
    total.requests += worker->responses_sent.load(relaxed);
    total.connections += worker->connections.load(relaxed);
    total.tls_handshakes += worker->tls_handshakes.load(relaxed);
    total.tls_resumed += worker->tls_resumed.load(relaxed);
    total.h2_connections += worker->h2_connections.load(relaxed);
    total.h2_streams += worker->h2_streams.load(relaxed);
    total.h3_connections += worker->h3_connections.load(relaxed);
    total.h3_streams += worker->h3_streams.load(relaxed);
    total.h3_resumed += worker->h3_resumed.load(relaxed);
    total.h3_early_data += worker->h3_early_data.load(relaxed);
  }
  return total;
}

// Requests answered so far, summed over io threads. Any thread.
inline std::uint64_t count_requests(const IoWorkers& workers) { return count_stats(workers).requests; }

// The stats endpoint's body: one JSON object and a newline.
inline std::string stats_json(const ServerStats& stats) {
  return "{\"requests\": " + std::to_string(stats.requests) +
         ", \"connections\": " + std::to_string(stats.connections) +
         ", \"tls_handshakes\": " + std::to_string(stats.tls_handshakes) +
         ", \"tls_resumed\": " + std::to_string(stats.tls_resumed) +
         ", \"h2_connections\": " + std::to_string(stats.h2_connections) +
         ", \"h2_streams\": " + std::to_string(stats.h2_streams) +
         ", \"h3_connections\": " + std::to_string(stats.h3_connections) +
         ", \"h3_streams\": " + std::to_string(stats.h3_streams) +
         ", \"h3_resumed\": " + std::to_string(stats.h3_resumed) +
         ", \"h3_early_data\": " + std::to_string(stats.h3_early_data) + "}\n";
}

}  // namespace loadlab::target
