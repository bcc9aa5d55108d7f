#include "request_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <queue>

namespace loadlab::load {

bool write_request_csv(const std::string& path, std::vector<RequestLog*> logs, std::string* error) {
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
  std::fputs("start_offset_us,latency_us,status,bytes\n", f);

  using Cursor = std::pair<RequestLog::const_iterator, RequestLog::const_iterator>;
  auto later = [](const Cursor& a, const Cursor& b) {
    return a.first->start_offset_us > b.first->start_offset_us;
  };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heap(later);
  for (RequestLog* log : logs)
    if (!log->empty()) heap.push({log->cbegin(), log->cend()});
  while (!heap.empty()) {
    Cursor c = heap.top();
    heap.pop();
    const RequestRecord& r = *c.first;
    std::fprintf(f, "%lld,%u,%d,%lld\n", static_cast<long long>(r.start_offset_us), r.latency_us, r.status,
                 static_cast<long long>(r.bytes));
    if (++c.first != c.second) heap.push(c);
  }
  bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0) ok = false;
  if (!ok && error) *error = "--csv-requests: cannot write " + path + ": " + std::strerror(errno);
  return ok;
}

}  // namespace loadlab::load
