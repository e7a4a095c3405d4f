/* Four coroutines on heap stacks, each yielding to a round-robin scheduler
   from 3 to 6 nested calls deep; argv[1] scheduler rounds. Each coroutine
   must continue its own contexts when resumed: its calls are never seen as
   called by the scheduler, yield_ or swapcontext, and the forest does not
   grow with the rounds. Prints how often each function ran. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define COS 4
static ucontext_t sched_ctx, co_ctx[COS];
static int running;
static long rounds;
static long count_yield;
#include "co_work.h"

__attribute__((noinline)) void yield_(void)
{
   count_yield++;
   swapcontext(&co_ctx[running], &sched_ctx);
}


__attribute__((noinline)) void schedule(void)
{
   for (long r = 0; r < rounds; r++)
      for (running = 0; running < COS; running++)
         swapcontext(&sched_ctx, &co_ctx[running]);
}

int main(int argc, char** argv)
{
   rounds = argc > 1 ? atol(argv[1]) : 100;
   for (int i = 0; i < COS; i++) {
      getcontext(&co_ctx[i]);
      co_ctx[i].uc_stack.ss_sp = malloc(1 << 16);
      co_ctx[i].uc_stack.ss_size = 1 << 16;
      co_ctx[i].uc_link = NULL;
      makecontext(&co_ctx[i], (void (*)(void))co_main, 1, i);
   }
   schedule();
   printf("co_sched: rounds %ld leaf %ld yield %ld nest %ld\n", rounds, count_leaf, count_yield, count_nest);
   return 0;
}
