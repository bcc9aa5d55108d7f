#pragma once
// A load agent's result as it arrives over gRPC, built from known latencies: the ground
// truth the merge and the flags are checked against.
#include <cstdint>
#include <vector>

#include "loadlab/shared/histogram.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::controller {

inline v1::LoadResult part(const std::vector<int64_t>& latencies, double qps) {
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

}  // namespace loadlab::controller
