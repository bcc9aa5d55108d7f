// uring_probe: the least a closed-loop HTTP/1.1 client can cost per request with io_uring (issue
// 26): one thread, one ring, N keep-alive connections, each completion's next send and receive
// submitted together, one io_uring_enter per batch of completions. No parser beyond the
// Content-Length, no timing, no histogram: an upper bound of what an io_uring transport under
// loadlab-load could gain. bench/uring_probe.sh runs it beside loadlab-load and wrk.
//
//   uring_probe HOST PORT CONNS SECONDS [defer]
//
// defer: IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (Linux 6.1): completions are
// run in the thread's own io_uring_enter instead of by task work interrupting it.
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct Conn {
  int fd;
  char buf[4096];
  size_t have = 0;
  size_t need = 0;  // whole response size once known
};

static const char kReq[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

static size_t response_size(const char* b, size_t n) {
  const char* end = static_cast<const char*>(memmem(b, n, "\r\n\r\n", 4));
  if (!end) return 0;
  const char* cl = static_cast<const char*>(memmem(b, end - b, "Content-Length: ", 16));
  if (!cl) cl = static_cast<const char*>(memmem(b, end - b, "content-length: ", 16));
  size_t body = cl ? strtoul(cl + 16, nullptr, 10) : 0;
  return (end - b) + 4 + body;
}

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const int conns = atoi(argv[3]);
  const double secs = atof(argv[4]);
  const bool defer = argc > 5 && std::string(argv[5]) == "defer";
  io_uring ring;
  io_uring_params p{};
  if (defer) p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int rc = io_uring_queue_init_params(4 * conns + 16, &ring, &p);
  if (rc < 0) {
    fprintf(stderr, "io_uring: %s\n", strerror(-rc));
    return 1;
  }
  std::vector<Conn> c(conns);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(atoi(argv[2]));
  inet_pton(AF_INET, argv[1], &a.sin_addr);
  for (auto& x : c) {
    x.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(x.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(x.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
  }
  auto send_recv = [&](size_t i) {
    io_uring_sqe* s = io_uring_get_sqe(&ring);
    io_uring_prep_send(s, c[i].fd, kReq, sizeof kReq - 1, 0);
    io_uring_sqe_set_data64(s, (i << 1) | 1);
    s->flags |= IOSQE_CQE_SKIP_SUCCESS;
    s = io_uring_get_sqe(&ring);
    io_uring_prep_recv(s, c[i].fd, c[i].buf, sizeof c[i].buf, 0);
    io_uring_sqe_set_data64(s, i << 1);
  };
  for (int i = 0; i < conns; ++i) send_recv(i);
  long done = 0;
  rusage r0;
  getrusage(RUSAGE_SELF, &r0);
  auto t0 = std::chrono::steady_clock::now();
  auto deadline = t0 + std::chrono::duration<double>(secs);
  unsigned enters = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    io_uring_submit_and_wait(&ring, 1);
    ++enters;
    io_uring_cqe* cqe;
    unsigned head, n = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++n;
      uint64_t d = cqe->user_data;
      size_t i = d >> 1;
      if (d & 1) {
        if (cqe->res < 0) {
          fprintf(stderr, "send: %s\n", strerror(-cqe->res));
          return 1;
        }
        continue;
      }
      if (cqe->res <= 0) {
        fprintf(stderr, "recv: %d\n", cqe->res);
        return 1;
      }
      Conn& x = c[i];
      x.have += cqe->res;
      if (!x.need) x.need = response_size(x.buf, x.have);
      if (x.need && x.have >= x.need) {
        ++done;
        x.have = 0;
        x.need = 0;
        send_recv(i);
      } else {
        io_uring_sqe* s = io_uring_get_sqe(&ring);
        io_uring_prep_recv(s, x.fd, x.buf + x.have, sizeof x.buf - x.have, 0);
        io_uring_sqe_set_data64(s, i << 1);
      }
    }
    io_uring_cq_advance(&ring, n);
  }
  auto t1 = std::chrono::steady_clock::now();
  rusage r1;
  getrusage(RUSAGE_SELF, &r1);
  auto cpu = [](const rusage& r) {
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  double el = std::chrono::duration<double>(t1 - t0).count();
  double cs = cpu(r1) - cpu(r0);
  printf("uring%s conns %d requests %ld req/s %.0f cpu_s %.3f req/cpu_s %.0f enters/req %.3f\n",
         defer ? "-defer" : "", conns, done, done / el, cs, done / cs, double(enters) / done);
  return 0;
}
