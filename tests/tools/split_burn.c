/* loadlab-split-burn: a process whose CPU time is split between two named functions, the
 * ground truth of the profiler's tests.
 *
 *   loadlab-split-burn HOT_PCT SECONDS
 *
 * Burns one core for SECONDS (of its own CPU time), HOT_PCT % of the work in burn_hot and the
 * rest in burn_cold: each round calls burn_hot HOT_PCT times and burn_cold 100 - HOT_PCT
 * times, every call the same fixed loop. Built with frame pointers so that a profile's stacks
 * reach main. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

/* The same work in both: a fixed number of dependent steps. */
#define STEPS 20000

/* Called once by each burner, not as its last act (that would be a jump), which makes them
 * functions with a frame: GCC 12 sets up none in a leaf whatever -mno-omit-leaf-frame-pointer
 * says, and a sample in a leaf without its frame skips the leaf's caller. */
__attribute__((noinline)) void burned(void) { __asm__ volatile(""); }

__attribute__((noinline)) void burn_hot(void) {
  unsigned long x = sink;
  for (int i = 0; i < STEPS; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  sink = x;
  burned();
  sink = sink + 1;
}

__attribute__((noinline)) void burn_cold(void) {
  unsigned long x = sink;
  for (int i = 0; i < STEPS; ++i) x = x * 6364136223846793005UL + 1442695040888963409UL;
  sink = x;
  burned();
  sink = sink + 1;
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: loadlab-split-burn HOT_PCT SECONDS\n");
    return 2;
  }
  const int hot = atoi(argv[1]);
  const double seconds = atof(argv[2]);
  if (hot < 0 || hot > 100 || !(seconds > 0 && seconds <= 600)) {
    fprintf(stderr, "loadlab-split-burn: HOT_PCT must be 0..100 and SECONDS 0..600\n");
    return 2;
  }
  printf("burning\n");
  fflush(stdout);
  const double end = cpu_seconds() + seconds;
  while (cpu_seconds() < end) {
    for (int i = 0; i < hot; ++i) burn_hot();
    for (int i = hot; i < 100; ++i) burn_cold();
  }
  return 0;
}
