/* Recursion for the call graph: rec calls itself (a rolled recursive
 * context), even and odd call each other; real_main calls rec(20) and
 * even(21) ROUNDS times: rec runs 21 * ROUNDS times, even and odd 11 *
 * ROUNDS each, leaf once per rec, even and odd. */
#include <stdio.h>
#define ROUNDS 200
static volatile int sink;
__attribute__((noipa)) static int leaf(int x) { int s = 0; for (int i = 0; i < 50; i++) s += i ^ x; return s; }
__attribute__((noipa)) static int rec(int n) { sink += leaf(n); return n == 0 ? 0 : rec(n - 1) + 1; }
__attribute__((noipa)) static int odd(int n);
__attribute__((noipa)) static int even(int n) { sink += leaf(n); return n == 0 ? 0 : odd(n - 1); }
__attribute__((noipa)) static int odd(int n) { sink += leaf(n); return n == 0 ? 1 : even(n - 1); }
__attribute__((noipa)) static int real_main(void) {
    int s = 0;
    for (int i = 0; i < ROUNDS; i++) s += rec(20) + even(21);
    return s;
}
int main(void) { printf("%d\n", real_main()); return 0; }
