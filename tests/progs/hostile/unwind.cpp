// Long unwinds: longjmp and a C++ throw out of recursion 20,000 frames deep
// (about 5 MB of stack), caught in main, which then calls other functions.
#include <csetjmp>
#include <cstdio>
#include <stdexcept>

static std::jmp_buf env;
static volatile long sink;

__attribute__((noinline)) long dive_jmp(long n)
{
   volatile char pad[200];
   pad[0] = (char)n;
   if (n == 0) std::longjmp(env, 1);
   return dive_jmp(n - 1) + pad[0];
}

__attribute__((noinline)) long dive_throw(long n)
{
   volatile char pad[200];
   pad[0] = (char)n;
   if (n == 0) throw std::runtime_error("bottom");
   return dive_throw(n - 1) + pad[0];
}

__attribute__((noinline)) long after_longjmp(long x) { sink += x; return x + 1; }
__attribute__((noinline)) long after_throw(long x) { sink += x; return x + 2; }

int main()
{
   long a = 0, b = 0;
   for (int round = 0; round < 3; round++) {
      if (!setjmp(env)) dive_jmp(20000);
      a = after_longjmp(a);
      try {
         dive_throw(20000);
      } catch (const std::runtime_error &e) {
         b = after_throw(b);
      }
   }
   std::printf("unwind: longjmp %ld throw %ld\n", a, b);
   return 0;
}
