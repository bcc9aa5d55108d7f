/* Busy-loop rounds per request (server.c): a test's commit changes it to add work. */
#define WORK_ITERATIONS 1000
