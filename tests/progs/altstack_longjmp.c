/* Threads that each leave a signal handler by siglongjmp: every thread has
   its own alternate signal stack (sigaltstack), raises SIGUSR1 50 frames
   deep, and the handler (SA_ONSTACK, unless the second argument is
   "nostack") siglongjmps back to the thread's base function thr(), which
   then calls after() AFTERS times and does more work (work > leaf). This is
   what crash handlers and stack-overflow recovery do. The alternate stacks
   are malloc'd ("heap", the default) or static arrays ("bss": below every
   thread's stack in memory).

   Usage: altstack_longjmp THREADS [heap|bss|nostack]
   Prints its own counts: altstack_longjmp: after N handler N work N leaf N */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 50
#define DEPTH 50
#define AFTERS 4
#define LEAVES 3
#define MAX_THREADS 16

static __thread sigjmp_buf env;
static long n_after[MAX_THREADS], n_handler[MAX_THREADS], n_work[MAX_THREADS], n_leaf[MAX_THREADS];
static __thread int me;
static int use_bss;
static char bss_stacks[MAX_THREADS][1 << 16];

__attribute__((noinline, noipa)) void in_handler(void) { n_handler[me]++; }
__attribute__((noinline)) void handler(int sig)
{
   in_handler();
   siglongjmp(env, 1);
}

__attribute__((noinline, noipa)) int deep(int d)
{
   if (d == 0) {
      pthread_kill(pthread_self(), SIGUSR1);
      return 0;   /* never reached: the handler jumps out */
   }
   return deep(d - 1) + 1;
}

__attribute__((noinline, noipa)) int after(int x) { n_after[me]++; return x + 1; }
__attribute__((noinline, noipa)) int leaf(int x) { n_leaf[me]++; return x * 3; }
__attribute__((noinline, noipa)) int work(int x)
{
   n_work[me]++;
   int s = 0;
   for (int i = 0; i < LEAVES; i++) s += leaf(x + i);
   return s;
}

static void *thr(void *arg)
{
   me = (int)(long)arg;
   stack_t ss;
   memset(&ss, 0, sizeof ss);
   ss.ss_size = 1 << 16;
   ss.ss_sp = use_bss ? bss_stacks[me] : malloc(ss.ss_size);
   if (!ss.ss_sp || sigaltstack(&ss, NULL)) {
      perror("sigaltstack");
      exit(1);
   }
   volatile int s = 0;
   for (int r = 0; r < ROUNDS; r++) {
      if (!sigsetjmp(env, 1)) deep(DEPTH);
      for (int i = 0; i < AFTERS; i++) s = after(s);
      s += work(r);
   }
   /* The alternate stack stays this thread's until it exits: disable it
      before freeing its memory. */
   stack_t off;
   memset(&off, 0, sizeof off);
   off.ss_flags = SS_DISABLE;
   sigaltstack(&off, NULL);
   if (!use_bss) free(ss.ss_sp);
   return NULL;
}

int main(int argc, char **argv)
{
   int threads = argc > 1 ? atoi(argv[1]) : 4;
   const char *where = argc > 2 ? argv[2] : "heap";
   int onstack = strcmp(where, "nostack") != 0;
   use_bss = strcmp(where, "bss") == 0;
   if (onstack && !use_bss && strcmp(where, "heap") != 0) {
      fprintf(stderr, "altstack_longjmp: the stacks are heap, bss or nostack, not %s\n", where);
      return 2;
   }
   if (threads < 1 || threads > MAX_THREADS) {
      fprintf(stderr, "altstack_longjmp: THREADS must be 1..%d\n", MAX_THREADS);
      return 2;
   }
   struct sigaction sa;
   memset(&sa, 0, sizeof sa);
   sa.sa_handler = handler;
   sigemptyset(&sa.sa_mask);
   sa.sa_flags = onstack ? SA_ONSTACK : 0;
   sigaction(SIGUSR1, &sa, NULL);
   pthread_t t[MAX_THREADS];
   for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, thr, (void *)i);
   for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
   long a = 0, h = 0, w = 0, l = 0;
   for (int i = 0; i < threads; i++) {
      a += n_after[i];
      h += n_handler[i];
      w += n_work[i];
      l += n_leaf[i];
   }
   printf("altstack_longjmp: after %ld handler %ld work %ld leaf %ld\n", a, h, w, l);
   return 0;
}
