/* makecontext/swapcontext coroutines on heap stacks: four coroutines that
   yield to a scheduler from 3 to 5 nested calls for 50 rounds, then return
   through uc_link; and one that makes nested calls and returns through
   uc_link without ever yielding. main calls other functions after each. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define COROUTINES 4
#define ROUNDS 50
#define STACK (1 << 16)

static ucontext_t sched_ctx, co_ctx[COROUTINES], link_ctx, main_ctx;
static long acc[COROUTINES];
static int current;
static volatile long sink;

__attribute__((noinline)) static void yield_(void) { swapcontext(&co_ctx[current], &sched_ctx); }

__attribute__((noinline)) static void nest(int depth, long round)
{
   if (depth == 0) { acc[current] += round; yield_(); return; }
   nest(depth - 1, round);
   sink += depth;
}

static void coroutine(int id)
{
   for (long round = 0; round < ROUNDS; round++) nest(3 + id % 3, round + id);
}

__attribute__((noinline)) static long sum_to(long n) { return n == 0 ? 0 : n + sum_to(n - 1); }
static void linked(void) { sink += sum_to(100); }

__attribute__((noinline)) static long after_scheduler(long x) { return x + 1; }
__attribute__((noinline)) static long after_link(long x) { return x + 2; }

static void make(ucontext_t *ctx, ucontext_t *link, void (*fn)(), int argc, int arg)
{
   getcontext(ctx);
   ctx->uc_stack.ss_sp = malloc(STACK);
   ctx->uc_stack.ss_size = STACK;
   ctx->uc_link = link;
   if (argc) makecontext(ctx, fn, 1, arg);
   else makecontext(ctx, fn, 0);
}

int main(void)
{
   for (int i = 0; i < COROUTINES; i++) make(&co_ctx[i], &sched_ctx, (void (*)())coroutine, 1, i);
   /* ROUNDS yields each, then one more resume to let each return. */
   for (int round = 0; round <= ROUNDS; round++)
      for (current = 0; current < COROUTINES; current++) swapcontext(&sched_ctx, &co_ctx[current]);
   long a = after_scheduler(acc[0] + acc[1] + acc[2] + acc[3]);

   make(&link_ctx, &main_ctx, linked, 0, 0);
   swapcontext(&main_ctx, &link_ctx);
   long b = after_link(sink);
   printf("coroutines: %ld %ld\n", a, b);
   return 0;
}
