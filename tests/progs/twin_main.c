/* Calls twin_a.c's and twin_b.c's `helper` (twin.h) through run_a and
 * run_b, and prints each one's calls and twin_leaf's calls by caller. */
#include <stdio.h>
#include "twin.h"

static long leaf_calls[2];
static int wait_in_leaf[2];   /* an argument: the first call from each side says
                                "ready" and waits for a line */

__attribute__((noinline)) void twin_leaf(int from)
{
   char line[8];
   leaf_calls[from]++;
   if (!wait_in_leaf[from]) return;
   wait_in_leaf[from] = 0;
   printf("ready\n");
   fflush(stdout);
   if (!fgets(line, sizeof line, stdin)) line[0] = 0;
}

int main(int argc, char **argv)
{
   (void)argv;
   wait_in_leaf[FROM_A] = wait_in_leaf[FROM_B] = argc > 1;
   long s = run_a(3) + run_b(5);
   printf("helper_a %ld helper_b %ld leaf_a %ld leaf_b %ld sum %ld\n", helper_a_calls(), helper_b_calls(),
          leaf_calls[FROM_A], leaf_calls[FROM_B], s);
   return 0;
}
