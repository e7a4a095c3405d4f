/* gcc -O2 moves f's unlikely branch into f.cold: f jumps there, f.cold
   calls rare and jumps back into the middle of f, which then calls h twice
   (the second a tail call). Prints its own counts. */
#include <stdio.h>

static volatile int sink;
static int f_calls, cold_taken, h_calls, rare_calls;

__attribute__((noinline)) void h(int x)
{
    h_calls++;
    sink += x;
}

__attribute__((noinline, cold)) void rare(int x)
{
    rare_calls++;
    sink -= x;
}

__attribute__((noinline)) void f(int i)
{
    f_calls++;
    if (__builtin_expect(i % 7 == 0, 0)) {
        cold_taken++;
        rare(i);
        sink ^= i;
    }
    h(i);
    h(i + 1);
}

int main(void)
{
    for (int i = 0; i < 50; i++)
        f(i);
    printf("f %d cold %d rare %d h %d\n", f_calls, cold_taken, rare_calls, h_calls);
    return 0;
}
