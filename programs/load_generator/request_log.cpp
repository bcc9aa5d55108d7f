#include "request_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <queue>

namespace loadlab::load {

bool write_request_csv(const std::string& path, std::vector<RequestLog*> logs, const RequestCsvRun& run,
                       std::string* error) {
  auto by_start = [](const RequestRecord& a, const RequestRecord& b) {
    return a.start_offset_us < b.start_offset_us;
  };
  // Each log is already nearly in start order (completion order); sorting in place and
  // merging keeps the extra memory to one cursor per log.
  for (RequestLog* log : logs) std::stable_sort(log->begin(), log->end(), by_start);

  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    if (error) *error = "--csv-requests: cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  std::vector<char> buffer(1 << 16);
  std::setvbuf(f, buffer.data(), _IOFBF, buffer.size());
  std::fwrite(kRequestCsvHeader.data(), 1, kRequestCsvHeader.size(), f);
  const std::string prefix = std::string(run.protocol) + "," + std::string(run.tls_version) + ",";

  using Cursor = std::pair<RequestLog::const_iterator, RequestLog::const_iterator>;
  auto later = [](const Cursor& a, const Cursor& b) {
    return a.first->start_offset_us > b.first->start_offset_us;
  };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heap(later);
  for (RequestLog* log : logs)
    if (!log->empty()) heap.push({log->cbegin(), log->cend()});
  for (unsigned long long iteration = 0; !heap.empty(); ++iteration) {
    Cursor c = heap.top();
    heap.pop();
    const RequestRecord& r = *c.first;
    std::fprintf(f, "%s%llu,%lld,%u,%u,%u,%u,%llu,%u,%u,%u\n", prefix.c_str(), iteration,
                 static_cast<long long>(r.start_offset_us), r.total_us, r.connect_us, r.tls_us,
                 r.first_byte_us, static_cast<unsigned long long>(r.bytes), static_cast<unsigned>(r.status),
                 static_cast<unsigned>(r.reused), static_cast<unsigned>(r.resumed));
    if (++c.first != c.second) heap.push(c);
  }
  bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0) ok = false;
  if (!ok && error) *error = "--csv-requests: cannot write " + path + ": " + std::strerror(errno);
  return ok;
}

}  // namespace loadlab::load
