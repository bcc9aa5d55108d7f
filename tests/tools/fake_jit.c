// loadlab-fake-jit: a process that runs code it made at run time, as a JIT does: a busy loop
// copied into an anonymous executable mapping and called over and over. With "map" it writes
// /tmp/perf-PID.map naming that code jit_burn, as a JVM's or Node's perf map does (the ground
// truth of the profiler's JIT frames); without, its frames have no name. Prints "burning" once
// running; on SIGTERM removes its map and exits. x86-64 only (the loop is machine code).
//
//   loadlab-fake-jit map|nomap
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

int main(int argc, char** argv) {
#if defined(__x86_64__)
  // mov rcx, 1000000; loop: dec rcx; jnz loop; ret
  static const unsigned char code[] = {0x48, 0xC7, 0xC1, 0x40, 0x42, 0x0F, 0x00,
                                       0x48, 0xFF, 0xC9, 0x75, 0xFB, 0xC3};
  const int map = argc > 1 && strcmp(argv[1], "map") == 0;
  void* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 1;
  memcpy(page, code, sizeof code);
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  if (map) {
    FILE* f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "%lx %zx jit_burn\n", (unsigned long)page, sizeof code);
    fclose(f);
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  printf("burning\n");
  fflush(stdout);
  void (*burn)(void) = (void (*)(void))page;
  while (!stopping) burn();
  if (map) unlink(path);
  return 0;
#else
  (void)argc;
  (void)argv;
  fprintf(stderr, "loadlab-fake-jit: x86-64 only\n");
  return 2;
#endif
}
