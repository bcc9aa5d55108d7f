#pragma once
// A latency histogram's wire form (v1::Histogram: sparse buckets) and back.
#include <string>

#include "loadlab/shared/histogram.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::proto {

void to_proto(const Histogram& h, v1::Histogram* out);
// Throws InputError (path "histogram.FIELD") when `in` is not a histogram: bad parameters,
// a bucket out of range.
void from_proto(const v1::Histogram& in, Histogram* out);
// The percentiles, mean, min and max of `h` in the wire form.
void latency_of(const Histogram& h, v1::Latency* out);

}  // namespace loadlab::proto
