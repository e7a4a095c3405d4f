/* Signals against the shadow stack: a handler interrupted by a second
   handler (nested), a handler on an alternate stack, timer signals landing
   in deep recursion, and siglongjmp out of SIGSEGV handlers. The output is
   deterministic: counts of things the program controls, not of timer ticks. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile sig_atomic_t inner_runs, outer_runs, alt_runs, ticks;
static volatile long sink;
static sigjmp_buf segv_env;

__attribute__((noinline)) static void touch(long v) { sink += v; }

static void on(int sig, void (*fn)(int), int flags)
{
   struct sigaction sa = { 0 };
   sa.sa_handler = fn;
   sa.sa_flags = flags;
   sigemptyset(&sa.sa_mask);
   sigaction(sig, &sa, NULL);
}

static void inner_handler(int sig) { touch(sig); inner_runs++; }
static void outer_handler(int sig)
{
   touch(sig);
   raise(SIGUSR2);           /* delivered now, on top of this handler */
   touch(sig);
   outer_runs++;
}

/* Raises sig from `depth` frames down. */
__attribute__((noinline)) static long raise_at(int depth, int sig)
{
   volatile char pad[64];
   pad[0] = (char)depth;
   if (depth == 0) { raise(sig); return 1; }
   return raise_at(depth - 1, sig) + pad[0];
}

static void alt_handler(int sig)
{
   stack_t now;
   sigaltstack(NULL, &now);
   touch(sig);
   if (now.ss_flags & SS_ONSTACK) alt_runs++;
}

static void tick_handler(int sig) { touch(sig); ticks++; }

__attribute__((noinline)) static long recurse(int n)
{
   volatile long pad[4];
   pad[0] = n;
   if (n == 0) return 0;
   return recurse(n - 1) + (pad[0] & 7);
}

static void segv_handler(int sig) { touch(sig); siglongjmp(segv_env, 1); }

__attribute__((noinline)) static void fault_at(int depth, volatile int *where)
{
   if (depth == 0) { *where = 1; return; }
   fault_at(depth - 1, where);
   touch(depth);
}

__attribute__((noinline)) static long after_signals(long x) { return x * 2 + 1; }

int main(void)
{
   on(SIGUSR1, outer_handler, 0);
   on(SIGUSR2, inner_handler, 0);
   for (int i = 0; i < 50; i++) raise_at(i % 7, SIGUSR1);

   stack_t ss = { 0 };
   ss.ss_size = 1 << 16;
   ss.ss_sp = malloc(ss.ss_size);
   sigaltstack(&ss, NULL);
   on(SIGHUP, alt_handler, SA_ONSTACK);
   for (int i = 0; i < 20; i++) raise_at(50 + i, SIGHUP);

   /* Timer signals every 0.5 ms into recursion 5,000 deep, until 20 came. */
   on(SIGALRM, tick_handler, SA_RESTART);
   struct itimerval it = { { 0, 500 }, { 0, 500 } };
   setitimer(ITIMER_REAL, &it, NULL);
   long depth_sum = 0;
   int rounds = 0;
   while (ticks < 20 && rounds < 2000) { depth_sum = recurse(5000); rounds++; }
   struct itimerval off = { { 0, 0 }, { 0, 0 } };
   setitimer(ITIMER_REAL, &off, NULL);

   on(SIGSEGV, segv_handler, SA_NODEFER);
   int recovered = 0;
   for (int i = 0; i < 200; i++) {
      if (!sigsetjmp(segv_env, 1)) fault_at(i % 30, (volatile int *)(long)(8 * i));
      else recovered++;
   }

   printf("signals: nested %d/%d alt %d recursion %ld ticks %s segv %d after %ld\n",
          outer_runs, inner_runs, alt_runs, depth_sum, ticks >= 20 ? "enough" : "too few",
          recovered, after_signals(recovered));
   return 0;
}
