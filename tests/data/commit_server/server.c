/* A small HTTP/1.1 server for the tests of targets built from a commit: a test copies this
   folder into a git repository of its own, commits it (and changes to work.h), and an agent
   builds each commit with `cc`. Single-threaded, poll(), keep-alive, GET only: every request
   gets "hello" after WORK_ITERATIONS rounds of a busy loop (work.h), so that a commit can add
   work per request.

   usage: server PORT [HOST]   (HOST defaults to 127.0.0.1) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "work.h"

#define MAX_CONNECTIONS 1024
#define BUFFER 8192

static volatile unsigned long sink;

/* Not inlined: a profile names it (what grew between two commits). */
__attribute__((noinline)) static void work(void) {
  for (unsigned long i = 0; i < WORK_ITERATIONS; ++i) sink += i * 2654435761u;
}

struct connection {
  char in[BUFFER];
  size_t used;
};

static int listen_on(const char *host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(fd, 512) != 0) {
    perror("listen");
    exit(1);
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

/* Answers every complete request in c's buffer; 0 when the connection must close. */
static int serve(int fd, struct connection *c) {
  static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello";
  char *end;
  while ((end = memmem(c->in, c->used, "\r\n\r\n", 4)) != NULL) {
    size_t n = (size_t)(end - c->in) + 4;
    int close_after = memmem(c->in, n, "Connection: close", 17) != NULL;
    work();
    if (write(fd, reply, sizeof reply - 1) != (ssize_t)(sizeof reply - 1)) return 0;
    memmove(c->in, c->in + n, c->used - n);
    c->used -= n;
    if (close_after) return 0;
  }
  return c->used < BUFFER;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PORT [HOST]\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  int lfd = listen_on(argc > 2 ? argv[2] : "127.0.0.1", atoi(argv[1]));
  static struct pollfd fds[MAX_CONNECTIONS + 1];
  static struct connection conns[MAX_CONNECTIONS + 1];
  int n = 1;
  fds[0].fd = lfd;
  fds[0].events = POLLIN;
  printf("serving on port %s\n", argv[1]);
  fflush(stdout);
  for (;;) {
    if (poll(fds, (nfds_t)n, -1) < 0 && errno != EINTR) return 1;
    if ((fds[0].revents & POLLIN) && n <= MAX_CONNECTIONS) {
      int cfd = accept(lfd, NULL, NULL);
      if (cfd >= 0) {
        fds[n].fd = cfd;
        fds[n].events = POLLIN;
        conns[n].used = 0;
        ++n;
      }
    }
    for (int i = 1; i < n; ++i) {
      if (!fds[i].revents) continue;
      struct connection *c = &conns[i];
      ssize_t got = read(fds[i].fd, c->in + c->used, BUFFER - c->used);
      if (got > 0) c->used += (size_t)got;
      if (got <= 0 || !serve(fds[i].fd, c)) {
        close(fds[i].fd);
        fds[i] = fds[n - 1];
        conns[i] = conns[n - 1];
        --n;
        --i;
      }
    }
  }
}
