/* A coroutine whose stack lies in memory the program maps in steps, as Go's
   runtime maps its heap (which holds the goroutines' stacks): a 2 MB
   reservation, of which only the upper half is read-write when the
   coroutine starts on a stack at the bottom of that half. The coroutine
   then makes the lower half read-write (the core merges the halves into
   one mapping) and recurses into it, yielding to main at the bottom, round
   after round. argv: depth, rounds. Prints its own counts. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

static const size_t kHalf = 1u << 20;
static const size_t kStack = 64u << 10;   /* below it: the lower half */
static ucontext_t main_ctx, co_ctx;
static char* lower;
static long depth, dive_calls, leaf_calls, main_work_calls, sum;
static int rounds;

__attribute__((noinline)) static long leaf(long n)
{
   leaf_calls++;
   return n & 7;
}

/* About 600 bytes a frame: 400 frames reach 170 KB below the stack's top. */
__attribute__((noinline)) static long dive(long n)
{
   volatile char pad[512];
   dive_calls++;
   pad[n % 512] = (char)n;
   if (n == 0) {
      swapcontext(&co_ctx, &main_ctx);   /* yield from the lower half */
      return leaf(pad[0]);
   }
   return dive(n - 1) + leaf(n) + pad[(n + 1) % 512];
}

__attribute__((noinline)) static void co_main(void)
{
   if (mprotect(lower, kHalf, PROT_READ | PROT_WRITE) != 0) {
      perror("mprotect");
      exit(1);
   }
   for (int r = 0; r < rounds; r++) {
      sum += dive(depth);
      swapcontext(&co_ctx, &main_ctx);
   }
}

__attribute__((noinline)) static void main_work(void)
{
   main_work_calls++;
}

int main(int argc, char** argv)
{
   depth = argc > 1 ? atol(argv[1]) : 400;
   rounds = argc > 2 ? atoi(argv[2]) : 3;
   char* reserved = mmap(NULL, 2 * kHalf, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
   if (reserved == MAP_FAILED) {
      perror("mmap");
      return 1;
   }
   lower = reserved;
   char* upper = reserved + kHalf;
   if (mprotect(upper, kHalf, PROT_READ | PROT_WRITE) != 0) {
      perror("mprotect");
      return 1;
   }
   getcontext(&co_ctx);
   co_ctx.uc_stack.ss_sp = upper;
   co_ctx.uc_stack.ss_size = kStack;
   co_ctx.uc_link = &main_ctx;
   makecontext(&co_ctx, co_main, 0);
   /* Each round: the coroutine yields at its recursion's bottom and once
      it returned from it; it ends after the last. */
   for (int i = 0; i < 2 * rounds + 1; i++) {
      swapcontext(&main_ctx, &co_ctx);
      main_work();
   }
   printf("co_mapping_grows: dive %ld leaf %ld main_work %ld sum %ld\n", dive_calls, leaf_calls, main_work_calls,
          sum);
   return 0;
}
