// A C++ exception thrown out of a recursion deeper than 2 MB of stack and
// caught in main; main's next call must be main's, not __cxa_throw's.
#include <cstdio>
#include <cstdlib>

static volatile long sink;

__attribute__((noinline)) void dive(long n)
{
   volatile char pad[200];
   pad[0] = (char)n;
   if (n == 0) throw 42;
   dive(n - 1);
   sink += pad[0];
}

__attribute__((noinline)) void other(int i) { sink += i; }

int main(int argc, char** argv)
{
   long depth = argc > 1 ? std::atol(argv[1]) : 20000;
   for (int round = 0; round < 2; round++) {
      try {
         dive(depth);
      } catch (int) {
      }
      other(round);
   }
   std::printf("throw_deep: %ld\n", depth);
   return 0;
}
