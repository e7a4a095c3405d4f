/* A region marked with callgrind.h's macros, as a program instrumented for
   callgrind is: collection toggled on around solve(), not around parse(). */
#include <stdio.h>
#include <valgrind/callgrind.h>

static volatile unsigned long sink;

__attribute__((noinline)) void cell(int n) { for (int j = 0; j < n; j++) sink += j; }
__attribute__((noinline)) void row(int i) { for (int j = 0; j < i; j++) cell(j); }
__attribute__((noinline)) void solve(int n) { for (int i = 0; i < n; i++) row(i); }
__attribute__((noinline)) void parse(int n) { for (int i = 0; i < n; i++) cell(i); }

int main(void)
{
   parse(30);
   CALLGRIND_TOGGLE_COLLECT;
   solve(20);
   CALLGRIND_TOGGLE_COLLECT;
   parse(10);
   printf("%lu\n", sink);
   return 0;
}
