/* Loops, two-way branches, an unconditional jump and a switch compiled to a
 * jump table: control flow whose jumps kgrind's block modes count
 * (tests/test_block_modes.py compares them with callgrind --collect-jumps). */
#include <stdlib.h>

static volatile int sink;

__attribute__((noinline)) int classify(int v)
{
     switch (v % 7) {
     case 0: return v * 3;
     case 1: return v + 11;
     case 2: return v ^ 5;
     case 3: return v - 4;
     case 4: return v << 2;
     case 5: return v >> 1;
     default: return -v;
     }
}

__attribute__((noinline)) int walk(int n)
{
     int s = 0;
     for (int i = 0; i < n; i++) {
          if (i % 3 == 0)
               s += classify(i);
          else if (i & 1)
               s -= i;
          else
               continue;
          for (int j = 0; j < (i & 3); j++) {
               if (s > 1000)
                    break;
               s += j;
          }
     }
     return s;
}

int main(int argc, char **argv)
{
     int n = argc > 1 ? atoi(argv[1]) : 40;
     for (int r = 0; r < 3; r++)
          sink = walk(n + r);
     return 0;
}
