/* longjmp out of a recursion far deeper than --max-stackframe's 2 MB
   (argv[1] frames of about 256 bytes each, 20,000 by default: ~5 MB), then
   more calls from main: every dead frame must be popped, so that other()
   is called by main, not by longjmp. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf out;
static volatile long sink;

__attribute__((noinline)) void dive(long n)
{
   volatile char pad[200];
   pad[0] = (char)n;
   if (n == 0) longjmp(out, 1);
   dive(n - 1);
   sink += pad[0];
}

__attribute__((noinline)) void other(long i) { sink += i; }

int main(int argc, char** argv)
{
   long depth = argc > 1 ? atol(argv[1]) : 20000;
   for (int round = 0; round < 2; round++) {
      if (setjmp(out) == 0) dive(depth);
      other(round);
   }
   printf("longjmp_deep: %ld\n", depth);
   return 0;
}
