/* PLT calls from several calling contexts: direct calls, and at -O2 a tail
   call (a jump to the stub) right after direct calls to the same stub. The
   stubs' instructions are their callers'. lib_inner is a leaf (no PLT call
   of its own in between). */
#include <stdio.h>
int lib_inner(int x);
int lib_work(int x);
__attribute__((noinline)) int twice(int x) { return lib_inner(x) + lib_inner(x + 1); }
__attribute__((noinline)) int tail(int x) { return lib_inner(x + 2); }
__attribute__((noinline)) int left(int x) { return twice(x) + tail(x) + 1; }
__attribute__((noinline)) int right(int x) { return twice(x + 3) * 2 + lib_work(x); }
int main(void)
{
   int s = 0;
   for (int i = 0; i < 20; i++) s += (i & 1) ? left(i) : right(i);
   printf("plt contexts: %d\n", s);
   return 0;
}
