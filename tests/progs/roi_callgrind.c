/* A region marked with callgrind.h's macros, as a program instrumented for
   callgrind is: solve() but not parse(), by toggling collection (no
   argument) or by starting and stopping instrumentation ("instr"). */
#include <stdio.h>
#include <string.h>
#include <valgrind/callgrind.h>

static volatile unsigned long sink;

__attribute__((noinline)) void cell(int n) { for (int j = 0; j < n; j++) sink += j; }
__attribute__((noinline)) void row(int i) { for (int j = 0; j < i; j++) cell(j); }
__attribute__((noinline)) void solve(int n) { for (int i = 0; i < n; i++) row(i); }
__attribute__((noinline)) void parse(int n) { for (int i = 0; i < n; i++) cell(i); }

int main(int argc, char** argv)
{
   int instr = argc > 1 && strcmp(argv[1], "instr") == 0;
   parse(30);
   if (instr) CALLGRIND_START_INSTRUMENTATION;
   else CALLGRIND_TOGGLE_COLLECT;
   solve(20);
   if (instr) CALLGRIND_STOP_INSTRUMENTATION;
   else CALLGRIND_TOGGLE_COLLECT;
   parse(10);
   printf("%lu\n", sink);
   return 0;
}
