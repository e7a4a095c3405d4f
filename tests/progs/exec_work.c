/* Work in known contexts, then an exec (tests/test_exec.py).
 * usage: exec_work MODE [TARGET...]
 *   main:   phase_a, phase_b, then execs the first TARGET with the
 *           arguments "exec_work after"; if that fails the next (as a PATH
 *           search does), and if all fail, phase_c. Without a TARGET it
 *           makes the same calls but execv's (the reference for failing
 *           execs).
 *   thread: phase_a, then a second thread runs phase_b and execs TARGET
 *           while the main thread waits in pthread_join (in blocked_main);
 *           if the execs fail the thread ends, then phase_c.
 *   shell:  phase_a, then execs /bin/sh, which execs "exec_work after"
 *           (three images in one process).
 *   after:  the exec'd image: after_exec.
 * Each phase prints how often it called work: "calls: <caller> work <n>". */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char* mode;
static char** targets;
static int n_targets;

__attribute__((noinline)) long work(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) s += i % 7;
   return s;
}

// Calls work `times` times and says so.
static inline __attribute__((always_inline)) long repeat_work(const char* caller, int times)
{
   long s = 0;
   for (int i = 0; i < times; i++) s += work(1000 + i);
   printf("calls: %s work %d\n", caller, times);
   return s;
}

__attribute__((noinline)) long phase_a(void) { return repeat_work("phase_a", 3); }
__attribute__((noinline)) long phase_b(void) { return repeat_work("phase_b", 5); }
__attribute__((noinline)) long phase_c(void) { return repeat_work("phase_c", 2); }
__attribute__((noinline)) long after_exec(void) { return repeat_work("after_exec", 7); }

__attribute__((noinline)) void try_exec(void)
{
   fflush(stdout);
   char* const args[] = { (char*)"exec_work", (char*)"after", NULL };
   for (int i = 0; i < n_targets; i++)
      execv(targets[i], args);
   printf("exec did not happen\n");
}

static volatile int main_blocks;

static void* thread_main(void* arg)
{
   (void)arg;
   phase_b();
   // The exec comes once the main thread is in blocked_main, and (after
   // the pause) waiting in pthread_join.
   while (!main_blocks) sched_yield();
   usleep(50000);
   try_exec();
   return NULL;
}

__attribute__((noinline)) void blocked_main(pthread_t t)
{
   main_blocks = 1;
   pthread_join(t, NULL);
}

int main(int argc, char** argv)
{
   if (argc < 2) return 2;
   mode = argv[1];
   targets = argv + 2;
   n_targets = argc - 2;
   if (strcmp(mode, "after") == 0) {
      after_exec();
      return 0;
   }
   phase_a();
   if (strcmp(mode, "shell") == 0) {
      fflush(stdout);
      execl("/bin/sh", "sh", "-c", "exec \"$0\" after", argv[0], (char*)NULL);
      return 1;
   }
   if (strcmp(mode, "thread") == 0) {
      pthread_t t;
      pthread_create(&t, NULL, thread_main, NULL);
      blocked_main(t);
   } else {
      phase_b();
      try_exec();
   }
   phase_c();
   return 3;
}
