/* argv[1] coroutines on malloc'd 16 KB stacks, each entered by main in
   turn, yielding back to main, resumed once more and yielding again: all
   of them suspended at once (the cost of many suspended coroutines,
   docs/design/stack-switches.md, "Many suspended coroutines"). argv[2]
   generations (1 if not given): each generation's coroutines are left
   suspended, their stacks freed, and the next's malloc'd in that memory,
   where the dead ones' frames lie. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define STACK (16 * 1024)

static ucontext_t main_uc, *uc;
static int running;
static long count_work, count_body, count_yield;

__attribute__((noinline)) void work(void) { count_work++; }

__attribute__((noinline)) void yield(void)
{
   count_yield++;
   swapcontext(&uc[running], &main_uc);
}

__attribute__((noinline)) void body(void)
{
   count_body++;
   work();
   yield();
   work();
   yield();
}

int main(int argc, char** argv)
{
   int n = argc > 1 ? atoi(argv[1]) : 1000;
   int generations = argc > 2 ? atoi(argv[2]) : 1;
   uc = calloc((size_t)n, sizeof *uc);
   if (n < 1 || generations < 1 || !uc) return 2;
   for (int g = 0; g < generations; g++) {
      for (int i = 0; i < n; i++) {
         getcontext(&uc[i]);
         uc[i].uc_stack.ss_size = STACK;
         uc[i].uc_stack.ss_sp = malloc(STACK);
         uc[i].uc_link = NULL;
         if (!uc[i].uc_stack.ss_sp) return 3;
         makecontext(&uc[i], body, 0);
      }
      for (int round = 0; round < 2; round++)
         for (running = 0; running < n; running++) swapcontext(&main_uc, &uc[running]);
      for (int i = 0; i < n; i++) free(uc[i].uc_stack.ss_sp);
   }
   printf("co_many: work %ld body %ld yield %ld\n", count_work, count_body, count_yield);
   return 0;
}
