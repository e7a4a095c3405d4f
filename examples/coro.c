/* Two coroutines (ucontext) handing values to each other, for
   docs/manual.md's coroutine recipe. */
#include <stdio.h>
#include <ucontext.h>

static ucontext_t main_ctx, prod_ctx;
static volatile unsigned long sink;
static int value;

__attribute__((noinline)) static int produce_one(int i)
{
   for (int j = 0; j < 50; j++) sink += j;
   return i * i;
}

__attribute__((noinline)) static void producer(void)
{
   for (int i = 0; i < 100; i++) {
      value = produce_one(i);
      swapcontext(&prod_ctx, &main_ctx);
   }
}

__attribute__((noinline)) static void consume(int v)
{
   for (int j = 0; j < 20; j++) sink += v;
}

int main(void)
{
   static char stack[64 * 1024];
   getcontext(&prod_ctx);
   prod_ctx.uc_stack.ss_sp = stack;
   prod_ctx.uc_stack.ss_size = sizeof stack;
   prod_ctx.uc_link = &main_ctx;
   makecontext(&prod_ctx, producer, 0);
   for (int i = 0; i < 100; i++) {
      swapcontext(&main_ctx, &prod_ctx);
      consume(value);
   }
   printf("sum: %lu\n", sink);
   return 0;
}
