/* Two coroutines running the same call chain (co_main, then nest calling
   itself: rolled recursion), each dumping the profile from its leaf while
   the other is suspended in the same contexts; argv[1] rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#include "kgrind.h"

#define COS 2
static ucontext_t sched_ctx, co_ctx[COS];
static int running;
static volatile long sink;

__attribute__((noinline)) void leaf(long i)
{
   for (long j = 0; j < 50 + i; j++) sink += j;
   KGRIND_DUMP_STATS_AT("leaf");
   swapcontext(&co_ctx[running], &sched_ctx);
}

__attribute__((noinline)) void nest(int depth, long i)
{
   sink += depth;
   if (depth > 0)
      nest(depth - 1, i);
   else
      leaf(i);
}

__attribute__((noinline)) void co_main(int id)
{
   for (long i = 0;; i++) nest(2 + id, i);
}

int main(int argc, char** argv)
{
   long rounds = argc > 1 ? atol(argv[1]) : 3;
   for (int i = 0; i < COS; i++) {
      getcontext(&co_ctx[i]);
      co_ctx[i].uc_stack.ss_sp = malloc(1 << 16);
      co_ctx[i].uc_stack.ss_size = 1 << 16;
      co_ctx[i].uc_link = NULL;
      makecontext(&co_ctx[i], (void (*)(void))co_main, 1, i);
   }
   for (long r = 0; r < rounds; r++)
      for (running = 0; running < COS; running++) swapcontext(&sched_ctx, &co_ctx[running]);
   printf("done\n");
   return 0;
}
