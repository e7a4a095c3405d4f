/* At -O2, pick() is a conditional jump to big() (a tail call taken only
   for large x) followed by a plain return. */
#include <stdio.h>
__attribute__((noinline)) int big(int x) { return x * 7 - (x >> 3); }
__attribute__((noinline)) int pick(int x) {
   if (x > 6) return big(x);
   return x;
}
int main(int argc, char** argv) {
   int s = 0;
   for (int i = 0; i < 10; i++) s += pick(i + argc);
   printf("tailcall_cond: %d\n", s);
   return 0;
}
