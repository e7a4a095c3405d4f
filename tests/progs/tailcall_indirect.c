/* At -O2, middle() tail-calls through a function pointer (`jmp *%rax`):
   an indirect jump into target()'s, then other()'s, first instruction.
   Run as: tailcall_indirect [N] (N calls of middle, 6 if not given; the
   last one into other). */
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int target(int x) { return x * 3 + (x >> 2); }
__attribute__((noinline)) int other(int x) { return x - 1; }
int (*volatile fp)(int) = target;
__attribute__((noinline)) int middle(int x) {
   return fp(x + 1);
}
int main(int argc, char** argv) {
   int s = 0;
   int n = argc > 1 ? atoi(argv[1]) : 6;
   for (int i = 0; i < n; i++) {
      if (i == n - 1) fp = other;
      s += middle(i + argc);
   }
   printf("tailcall_indirect: %d\n", s);
   return 0;
}
