/* Recursion 100 000 deep. */
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long rec(long n) { if (n == 0) return 0; return 1 + rec(n - 1); }
__attribute__((noinline)) long odd(long n);
__attribute__((noinline)) long even(long n) { return n == 0 ? 0 : 1 + odd(n - 1); }
__attribute__((noinline)) long odd(long n) { return n == 0 ? 0 : 1 + even(n - 1); }
int main(int argc, char** argv) {
   long n = argc > 1 ? atol(argv[1]) : 100000;
   printf("deeprec: %ld %ld\n", rec(n), even(n));
   return 0;
}
