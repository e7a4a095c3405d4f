/* Calls twin_a.c's and twin_b.c's `helper` (twin.h) through run_a and
 * run_b, and prints each one's calls and twin_leaf's calls by caller. */
#include <stdio.h>
#include "twin.h"

static long leaf_calls[2];

__attribute__((noinline)) void twin_leaf(int from) { leaf_calls[from]++; }

int main(void)
{
   long s = run_a(3) + run_b(5);
   printf("helper_a %ld helper_b %ld leaf_a %ld leaf_b %ld sum %ld\n", helper_a_calls(), helper_b_calls(),
          leaf_calls[FROM_A], leaf_calls[FROM_B], s);
   return 0;
}
