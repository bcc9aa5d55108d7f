#include "loadlab/agent/proc_reader.hpp"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace loadlab::agent {

std::vector<pid_t> ProcFsReader::list_pids() {
  std::vector<pid_t> pids;
  DIR* d = opendir(root_.c_str());
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0) pids.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return pids;
}

std::optional<ProcStat> ProcFsReader::stat(pid_t pid) {
  std::string base = root_ + "/" + std::to_string(pid);
  std::ifstream f(base + "/stat");
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: parse after the last ')'.
  auto rparen = line.rfind(')');
  if (rparen == std::string::npos) return std::nullopt;
  std::istringstream in(line.substr(rparen + 2));
  ProcStat s;
  s.pid = pid;
  std::string state;
  long long ppid;
  in >> state >> ppid;
  // Fields 5..13 skipped; 14 utime, 15 stime, 16 cutime, 17 cstime.
  std::string skip;
  for (int i = 5; i <= 13; ++i) in >> skip;
  long long ut, st, cut, cst;
  if (!(in >> ut >> st >> cut >> cst)) return std::nullopt;
  s.ppid = static_cast<pid_t>(ppid);
  s.utime = static_cast<uint64_t>(ut);
  s.stime = static_cast<uint64_t>(st);
  s.cutime = static_cast<uint64_t>(cut);
  s.cstime = static_cast<uint64_t>(cst);
  clockid_t clock;
  timespec ts{};
  if (clock_getcpuclockid(pid, &clock) == 0 && clock_gettime(clock, &ts) == 0)
    s.cpu_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  std::ifstream status(base + "/status");
  for (std::string l; std::getline(status, l);) {
    if (l.rfind("VmRSS:", 0) == 0) {
      s.rss_kb = std::strtoull(l.c_str() + 6, nullptr, 10);
      break;
    }
  }
  return s;
}

long ProcFsReader::ticks_per_second() { return sysconf(_SC_CLK_TCK); }

}  // namespace loadlab::agent
