/* leaf() called from two sites of one caller: 1,000 cheap calls from line
   9, one expensive call from line 10 (one call edge per site). */
#include <stdio.h>
volatile long sink;
__attribute__((noinline)) void leaf(long n) { for (long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void work(void)
{
   for (int i = 0; i < 1000; i++)
      leaf(3);
   leaf(100000);
}
int main(void) { work(); printf("%ld\n", sink); return 0; }
