// loadlab-burn: a process of known cost, the ground truth for the agent's sampler tests.
//
//   loadlab-burn --port P [--cpu-pct X] [--children N] [--rss-mb M] [--file-mb F]
//
// Listens on 127.0.0.1:P (so a catalog's tcp readiness probe works), holds M MiB resident
// (every page written: its own, anonymous memory) and F MiB of a file mapped and read (every
// page: file-backed memory, in RSS but not RssAnon; the file is unlinked at once), forks N children, and
// every process (parent and children) burns X % of one core: in each 20 ms period it spins until its thread
// CPU clock has advanced X % of the period, then sleeps to the period's end. Runs until SIGTERM/SIGINT; the
// children die with the parent (PR_SET_PDEATHSIG) or by the group kill.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

double clock_s(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void burn(double pct) {
  const double period = 0.020;
  double next = clock_s(CLOCK_MONOTONIC);
  volatile unsigned long sink = 0;
  while (!g_stop) {
    double cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    while (clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0 < period * pct / 100.0)
      for (int i = 0; i < 1000; ++i) sink = sink + static_cast<unsigned long>(i);
    next += period;
    double wait = next - clock_s(CLOCK_MONOTONIC);
    if (wait > 0) {
      timespec ts{static_cast<time_t>(wait), static_cast<long>((wait - static_cast<time_t>(wait)) * 1e9)};
      nanosleep(&ts, nullptr);
    } else {
      next = clock_s(CLOCK_MONOTONIC);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int port = -1, children = 0;
  double pct = 0;
  long rss_mb = 0, file_mb = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--port")
      port = std::atoi(argv[i + 1]);
    else if (flag == "--cpu-pct")
      pct = std::atof(argv[i + 1]);
    else if (flag == "--children")
      children = std::atoi(argv[i + 1]);
    else if (flag == "--rss-mb")
      rss_mb = std::atol(argv[i + 1]);
    else if (flag == "--file-mb")
      file_mb = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "loadlab-burn: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (port < 0 || pct < 0 || pct > 100 || children < 0 || rss_mb < 0 || file_mb < 0) {
    std::fprintf(
        stderr,
        "usage: loadlab-burn --port P [--cpu-pct 0..100] [--children N] [--rss-mb M] [--file-mb F]\n");
    return 2;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  std::vector<char> memory(static_cast<size_t>(rss_mb) * 1024 * 1024);
  for (size_t i = 0; i < memory.size(); i += 4096) memory[i] = 1;  // resident, not just reserved
  volatile char file_sum = 0;
  if (file_mb > 0) {
    char path[] = "/tmp/loadlab-burn-XXXXXX";
    int file = mkstemp(path);
    const size_t size = static_cast<size_t>(file_mb) * 1024 * 1024;
    std::vector<char> chunk(1024 * 1024, 'f');
    bool ok = file >= 0;
    for (long m = 0; ok && m < file_mb; ++m)
      ok = write(file, chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size());
    if (file >= 0) unlink(path);
    void* map = ok ? mmap(nullptr, size, PROT_READ, MAP_SHARED, file, 0) : MAP_FAILED;
    if (map == MAP_FAILED) {
      std::fprintf(stderr, "loadlab-burn: cannot map a %ld MiB file in /tmp\n", file_mb);
      return 1;
    }
    close(file);
    const char* bytes = static_cast<const char*>(map);
    for (size_t i = 0; i < size; i += 4096) file_sum = static_cast<char>(file_sum + bytes[i]);  // mapped in
  }
  pid_t parent = getpid();
  for (int c = 0; c < children; ++c) {
    if (fork() == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);
      std::vector<char>().swap(memory);  // children hold no extra memory
      burn(pct);
      _exit(0);
    }
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 16) != 0) {
    std::fprintf(stderr, "loadlab-burn: cannot listen on 127.0.0.1:%d: %s\n", port, std::strerror(errno));
    return 1;
  }
  std::printf("burning %.1f%% in %d processes, %ld MiB resident, %ld MiB of a file mapped\n", pct,
              children + 1, rss_mb, file_mb);
  std::fflush(stdout);
  burn(pct);
  if (memory.size() > 1) std::printf("%d\n", memory[4096]);
  return 0;
}
