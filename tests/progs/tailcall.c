/* At -O2, middle() ends in a jump to target(): a tail call. */
#include <stdio.h>
__attribute__((noinline)) int target(int x) { return x * 3 + (x >> 2); }
__attribute__((noinline)) int middle(int x) { return target(x + 1); }
__attribute__((noinline)) int other(int x) { return target(x) + 1; }
int main(int argc, char** argv) {
   int s = 0;
   for (int i = 0; i < 5; i++) s += middle(i + argc);
   s += other(argc);
   printf("tailcall: %d\n", s);
   return 0;
}
