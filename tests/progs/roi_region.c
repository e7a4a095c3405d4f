/* A region of interest marked with kgrind.h, begun inside outer() (whose
   activation started before it). The program counts what the region did
   (its calls, by caller) and prints it. With the argument "whole" it makes
   no request: a whole-run profile, which holds the region's contexts too. */
#include <stdio.h>
#include <string.h>
#include "kgrind.h"

static volatile unsigned long sink;
static int calls_leaf_mid, calls_leaf_outer, calls_mid;

__attribute__((noinline)) void leaf(int i, int counting)
{
   for (int j = 0; j < 10 + i; j++) sink += j;
}

__attribute__((noinline)) void mid(int n, int counting)
{
   for (int i = 0; i < n; i++) {
      leaf(i, counting);
      calls_leaf_mid += counting;
   }
}

__attribute__((noinline)) void pre(void) { leaf(1, 0); mid(2, 0); }
__attribute__((noinline)) void post(void) { mid(4, 0); }

__attribute__((noinline)) void outer(int marked)
{
   pre();
   if (marked) KGRIND_START_INSTRUMENTATION;
   mid(3, 1);
   calls_mid++;
   leaf(7, 1);
   calls_leaf_outer++;
   if (marked) KGRIND_STOP_INSTRUMENTATION;
   post();
}

int main(int argc, char** argv)
{
   int marked = !(argc > 1 && strcmp(argv[1], "whole") == 0);
   outer(marked);
   printf("mid'outer'main %d\nleaf'mid'outer %d\nleaf'outer'main %d\n", calls_mid, calls_leaf_mid,
          calls_leaf_outer);
   return 0;
}
