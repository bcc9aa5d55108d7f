#pragma once
// --csv-requests: one record per measured request, kept per worker thread while the run
// lasts and written once at the end (no file I/O on the request path). 24 bytes a request
// plus the deque's block overhead (< 1 %): 10 million requests take about 240 MB.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace loadlab::load {

struct RequestRecord {
  int64_t start_offset_us;  // the latency's origin (intended send time in open loop), from measure start
  int64_t bytes;            // response bytes; 0 for a failure
  uint32_t latency_us;      // origin to completion (response or failure)
  int32_t status;           // HTTP status; 0 for a failure without a response
};
static_assert(sizeof(RequestRecord) == 24);

using RequestLog = std::deque<RequestRecord>;

// Writes "start_offset_us,latency_us,status,bytes" and one row per record of every log,
// merged in start order (each log is sorted in place first). False with `error` set when
// the file cannot be written.
bool write_request_csv(const std::string& path, std::vector<RequestLog*> logs, std::string* error);

}  // namespace loadlab::load
