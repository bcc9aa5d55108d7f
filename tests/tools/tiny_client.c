// loadlab-tiny-client: a small closed-loop HTTP/1.1 client in C that takes wrk's command line
// and prints the lines of wrk's summary the agent reads, so that a catalog can name it as a
// `wrk` client; after each response it spends --work steps in two named functions, HOT_PCT %
// in client_hot and the rest in client_cold: the ground truth of the load side's CPU profile.
//
//   loadlab-tiny-client --work N --split HOT_PCT [-t T] [-c C] -d Ns [--timeout Ns] [--latency]
//                       [-H HEADER]... http://HOST:PORT/PATH
//
// One connection, keep-alive, GET, for the duration; -t, -c, --timeout and -H are taken and
// not used (its summary says 1 thread and 1 connection).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void client_hot(unsigned long steps) {
  unsigned long x = sink;
  for (unsigned long i = 0; i < steps; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  sink = x;
}

__attribute__((noinline)) void client_cold(unsigned long steps) {
  unsigned long x = sink;
  for (unsigned long i = 0; i < steps; ++i) x = x * 6364136223846793005UL + 1442695040888963409UL;
  sink = x;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// One response on `fd` (headers, then Content-Length bytes of body, however large: what does
// not fit in `buf` is read over it): its size, or -1; `ok` whether its status was 2xx or 3xx.
static long read_response(int fd, char* buf, size_t cap, int* ok) {
  size_t used = 0;
  char* end = NULL;
  while (!(end = memmem(buf, used, "\r\n\r\n", 4))) {
    if (used + 1 >= cap) return -1;
    ssize_t n = read(fd, buf + used, cap - 1 - used);
    if (n <= 0) return -1;
    used += (size_t)n;
  }
  *end = '\0';  // the headers end here: the searches below stay within them
  *ok = strncmp(buf, "HTTP/1.1 2", 10) == 0 || strncmp(buf, "HTTP/1.1 3", 10) == 0;
  const char* cl = strcasestr(buf, "content-length:");
  const size_t head = (size_t)(end + 4 - buf);
  const size_t total = head + (cl ? strtoul(cl + 15, NULL, 10) : 0);
  size_t got = used;
  while (got < total) {
    const size_t left = total - got;
    ssize_t n = read(fd, buf, left < cap ? left : cap);
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  return (long)got;
}

int main(int argc, char** argv) {
  unsigned long work = 0;
  int hot_pct = 50;
  double duration = 1;
  const char* url = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--latency") == 0) continue;
    if (i + 1 >= argc) {
      url = argv[i];
      break;
    }
    if (strcmp(argv[i], "--work") == 0)
      work = strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--split") == 0)
      hot_pct = atoi(argv[++i]);
    else if (strcmp(argv[i], "-d") == 0)
      duration = strtod(argv[++i], NULL);
    else if (argv[i][0] == '-')
      ++i;  // -t, -c, --timeout, -H, -s: their value
    else
      url = argv[i];
  }
  char host[64];
  int port = 0;
  char path[256] = "/";
  if (!url || sscanf(url, "http://%63[^:]:%d%255s", host, &port, path) < 2 || hot_pct < 0 || hot_pct > 100) {
    fprintf(stderr, "usage: loadlab-tiny-client --work N --split HOT_PCT -d Ns http://HOST:PORT/PATH\n");
    return 2;
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1 || connect(fd, (struct sockaddr*)&a, sizeof a) != 0) {
    fprintf(stderr, "loadlab-tiny-client: cannot connect to %s\n", url);
    return 1;
  }
  char request[512];
  const int len =
      snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", path, host, port);
  static char buf[1 << 16];
  unsigned long requests = 0, bytes = 0, not_ok = 0;
  const double start = now_s();
  while (now_s() - start < duration) {
    if (write(fd, request, (size_t)len) != len) break;
    int ok = 0;
    const long n = read_response(fd, buf, sizeof buf, &ok);
    if (n < 0) break;
    ++requests;
    not_ok += !ok;
    bytes += (unsigned long)n;
    client_hot(work * (unsigned long)hot_pct / 100);
    client_cold(work - work * (unsigned long)hot_pct / 100);
  }
  const double took = now_s() - start;
  printf("Running %.0fs test @ %s\n  1 threads and 1 connections\n", duration, url);
  printf("  %lu requests in %.2fs, %luB read\n", requests, took, bytes);
  if (not_ok > 0) printf("  Non-2xx or 3xx responses: %lu\n", not_ok);
  printf("Requests/sec: %.2f\n", took > 0 ? (double)requests / took : 0.0);
  close(fd);
  return 0;
}
