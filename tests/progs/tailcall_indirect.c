/* At -O2, middle() tail-calls through a function pointer (`jmp *%rax`):
   an indirect jump into target()'s, then other()'s, first instruction. */
#include <stdio.h>
__attribute__((noinline)) int target(int x) { return x * 3 + (x >> 2); }
__attribute__((noinline)) int other(int x) { return x - 1; }
int (*volatile fp)(int) = target;
__attribute__((noinline)) int middle(int x) {
   return fp(x + 1);
}
int main(int argc, char** argv) {
   int s = 0;
   for (int i = 0; i < 6; i++) {
      if (i == 5) fp = other;
      s += middle(i + argc);
   }
   printf("tailcall_indirect: %d\n", s);
   return 0;
}
