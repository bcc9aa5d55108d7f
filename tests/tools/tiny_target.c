// loadlab-tiny-target: a small HTTP/1.1 server in C, one thread, keep-alive, every request
// answered 200 with a fixed body. --work N spins a loop of N steps per request: a knob that
// adds a known, fixed number of user-space instructions to every request (the ground truth of
// the instructions-per-request tests; a catalog target that is not ours). --work-file PATH reads
// N from a file at start, and a HOT_PCT after it if there is one (as --split), so that a test
// changes the target's cost and not its command line.
// --split HOT_PCT shares those steps between two named functions, HOT_PCT % in work_hot and
// the rest in work_cold: the ground truth of the CPU profile tests.
//
//   loadlab-tiny-target --listen HOST:PORT [--work N | --work-file PATH] [--split HOT_PCT]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kMaxConnections = 64, kBuffer = 16384 };

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

struct connection {
  int fd;
  size_t used;
  char buf[kBuffer];
};

static unsigned long work_steps = 0;
static volatile unsigned long sink;

static void work(void) {
  unsigned long x = sink;
  for (unsigned long i = 0; i < work_steps; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  sink = x;
}

static int split_pct = -1;  // --split: unset

// The same steps as work(), in functions of their own (not inlined, not folded into one).
__attribute__((noinline)) void work_hot(unsigned long steps) {
  unsigned long x = sink;
  for (unsigned long i = 0; i < steps; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  sink = x;
}

__attribute__((noinline)) void work_cold(unsigned long steps) {
  unsigned long x = sink;
  for (unsigned long i = 0; i < steps; ++i) x = x * 6364136223846793005UL + 1442695040888963409UL;
  sink = x;
}

static void split_work(void) {
  const unsigned long hot = work_steps * (unsigned long)split_pct / 100;
  work_hot(hot);
  work_cold(work_steps - hot);
}

static int listen_on(const char* spec) {
  char host[64];
  const char* colon = strrchr(spec, ':');
  if (!colon || (size_t)(colon - spec) >= sizeof host) return -1;
  memcpy(host, spec, (size_t)(colon - spec));
  host[colon - spec] = '\0';
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(fd, 128) != 0) return -1;
  return fd;
}

// Answers every complete request in the buffer; 0 when the connection is to be closed.
static int serve(struct connection* c) {
  static const char response[] =
      "HTTP/1.1 200 OK\r\nContent-Length: 19\r\nContent-Type: text/plain\r\n\r\nHave Fun ~ Tester !";
  ssize_t n = read(c->fd, c->buf + c->used, sizeof c->buf - c->used);
  if (n <= 0) return 0;
  c->used += (size_t)n;
  char* end;
  while ((end = memmem(c->buf, c->used, "\r\n\r\n", 4)) != NULL) {
    if (split_pct >= 0)
      split_work();
    else
      work();
    if (write(c->fd, response, sizeof response - 1) != (ssize_t)(sizeof response - 1)) return 0;
    size_t consumed = (size_t)(end + 4 - c->buf);
    memmove(c->buf, c->buf + consumed, c->used - consumed);
    c->used -= consumed;
  }
  return c->used < sizeof c->buf;  // a request larger than the buffer: closed
}

int main(int argc, char** argv) {
  const char* listen_spec = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--listen") == 0)
      listen_spec = argv[i + 1];
    else if (strcmp(argv[i], "--work") == 0)
      work_steps = strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--split") == 0) {
      split_pct = atoi(argv[i + 1]);
      if (split_pct < 0 || split_pct > 100) {
        fprintf(stderr, "loadlab-tiny-target: --split must be 0..100\n");
        return 2;
      }
    } else if (strcmp(argv[i], "--work-file") == 0) {
      FILE* f = fopen(argv[i + 1], "r");
      if (!f || fscanf(f, "%lu", &work_steps) != 1) {
        fprintf(stderr, "loadlab-tiny-target: cannot read a number from %s\n", argv[i + 1]);
        return 2;
      }
      int hot_pct = -1;
      if (fscanf(f, "%d", &hot_pct) == 1) {
        if (hot_pct < 0 || hot_pct > 100) {
          fprintf(stderr, "loadlab-tiny-target: the split in %s must be 0..100\n", argv[i + 1]);
          return 2;
        }
        split_pct = hot_pct;
      }
      fclose(f);
    }
  }
  int lfd = listen_spec ? listen_on(listen_spec) : -1;
  if (lfd < 0) {
    fprintf(stderr, "usage: loadlab-tiny-target --listen HOST:PORT [--work N] (cannot listen)\n");
    return 2;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  static struct connection conns[kMaxConnections];
  struct pollfd fds[kMaxConnections + 1];
  size_t open = 0;
  while (!stopping) {
    fds[0] = (struct pollfd){.fd = lfd, .events = open < kMaxConnections ? POLLIN : 0};
    for (size_t i = 0; i < open; ++i) fds[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
    if (poll(fds, open + 1, -1) < 0) continue;  // a signal: the loop checks `stopping`
    for (size_t i = open; i-- > 0;) {
      if (!fds[i + 1].revents || serve(&conns[i])) continue;
      close(conns[i].fd);
      conns[i] = conns[--open];
    }
    if (fds[0].revents & POLLIN) {
      int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) conns[open++] = (struct connection){.fd = fd, .used = 0};
    }
  }
  return 0;
}
