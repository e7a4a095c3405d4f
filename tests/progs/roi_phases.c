/* KGRIND_ZERO_STATS then KGRIND_DUMP_STATS: the dump holds phase_b only.
   Prints how often phase_b called step (its own count). With "whole": no
   requests. */
#include <stdio.h>
#include <string.h>
#include "kgrind.h"

static volatile unsigned long sink;
static int steps_b;

__attribute__((noinline)) void step(int n) { for (int j = 0; j < n; j++) sink += j; }
__attribute__((noinline)) void phase_a(void) { for (int i = 0; i < 5; i++) step(i); }
__attribute__((noinline)) void phase_b(void) { for (int i = 0; i < 7; i++) { step(2 * i); steps_b++; } }
__attribute__((noinline)) void phase_c(void) { for (int i = 0; i < 3; i++) step(i); }

int main(int argc, char** argv)
{
   int marked = !(argc > 1 && strcmp(argv[1], "whole") == 0);
   phase_a();
   if (marked) KGRIND_ZERO_STATS;
   phase_b();
   if (marked) KGRIND_DUMP_STATS;
   phase_c();
   printf("step'phase_b'main %d\n", steps_b);
   return 0;
}
