/* A straddling load that misses the first-level data cache in one of its
   two lines only, where the other line is in D1 but no longer in LL:
   cachegrind looks the whole access up at LL then, so that other line is
   an LL miss (tests/test_events.py, with --D1=4096,8,64 --LL=16384,1,64:
   D1 8 sets of 8 ways, LL 256 direct-mapped lines). */
#include <stdint.h>
#include <string.h>

#define ROUNDS 1000

unsigned char buf[1 << 20] __attribute__((aligned(64)));
volatile uint64_t sink;

__attribute__((noinline)) static void touch(unsigned off) { sink += buf[off]; }

__attribute__((noinline)) static void straddle(void)
{
   uint64_t v;
   memcpy(&v, buf + 60, sizeof v); /* bytes 60-67: lines 0 and 1 of buf (loaded on the next line) */
   sink += v;
}

int main(void)
{
   for (int i = 0; i < ROUNDS; i++) {
      touch(0);              /* line 0 (D1 set 0) and */
      touch(64);             /* line 1 (D1 set 1) in D1 and LL */
      touch(16384 * (1 + i % 16)); /* LL's line 0 evicted (its LL slot; a D1 miss, 16 lines
                                      taking turns in D1 set 0); D1 keeps line 0 */
      for (unsigned k = 1; k <= 8; k++)
         touch(64 + k * 512); /* D1 set 1's 8 ways: line 1 out of D1, still in LL */
      straddle();            /* D1: line 0 hits, line 1 misses; LL: line 0 misses */
   }
   return 0;
}
