#pragma once
// --csv-requests: one record per measured request, kept per worker thread while the run
// lasts and written once at the end (no file I/O on the request path). 32 bytes a request
// plus the deque's block overhead (< 1 %): 10 million requests take about 320 MB.
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace loadlab::load {

// The µs figures saturate at 2^32 - 1 (71 minutes), above any --timeout.
struct RequestRecord {
  static constexpr uint64_t kMaxBytes = (uint64_t{1} << 46) - 1;  // 64 TiB

  int64_t start_offset_us;  // the latency's origin (open loop: intended send time, or when begun if earlier),
                            // from measure start
  uint32_t total_us;        // origin to completion (response or failure): the request's latency
  uint32_t connect_us;      // TCP connect this request paid; 0 on a reused connection
  uint32_t tls_us;          // TLS handshake this request paid; 0 on a reused connection or http://
  uint32_t first_byte_us;   // the write of the request to the first response byte; 0 for a failure
  uint64_t bytes : 46;      // response bytes (as LoadResult.bytes_read counts them); 0 for a failure
  uint64_t status : 16;     // HTTP status; 0 for a failure without a response
  // Went on a connection that had carried a request before. HTTP/2: the streams that waited
  // for a new connection (up to --streams of them) each paid its connect and handshake and
  // are not reused; the ones begun after it was up are.
  uint64_t reused : 1;
  uint64_t resumed : 1;  // the handshake this request paid resumed a session
};
static_assert(sizeof(RequestRecord) == 32);

using RequestLog = std::deque<RequestRecord>;

// What every row of one run shares.
struct RequestCsvRun {
  std::string_view protocol = "http/1.1";  // by its ALPN id: "http/1.1", "h2" (over TLS) or "h2c"
  std::string_view tls_version;            // "1.2" | "1.3"; empty for http://
};

inline constexpr std::string_view kRequestCsvHeader =
    "protocol,tls_version,iteration,start_offset_us,total_us,connect_us,tls_us,first_byte_us,bytes,status,"
    "reused,resumed\n";

// Writes kRequestCsvHeader and one row per record of every log, merged in start order
// (each log is sorted in place first); `iteration` numbers the rows from 0 in that order.
// False with `error` set when the file cannot be written.
bool write_request_csv(const std::string& path, std::vector<RequestLog*> logs, const RequestCsvRun& run,
                       std::string* error);

}  // namespace loadlab::load
