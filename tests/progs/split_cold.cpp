// g++ -O2 puts f's catch handler in `f(int) [clone .cold]`: g throws on
// every fifth call, the unwinder lands in f's cold part, which calls
// caught() and jumps back into f, which then calls h. Prints its own counts.
#include <cstdio>

static volatile int sink;
static int f_calls, g_calls, throws, caught_calls, h_calls;

__attribute__((noinline)) void g(int i)
{
    g_calls++;
    if (i % 5 == 0) {
        throws++;
        throw i;
    }
    sink += i;
}

__attribute__((noinline)) void caught(int e)
{
    caught_calls++;
    sink -= e;
}

__attribute__((noinline)) void h(int i)
{
    h_calls++;
    sink ^= i;
}

__attribute__((noinline)) void f(int i)
{
    f_calls++;
    try {
        g(i);
    } catch (int e) {
        caught(e);
    }
    h(i);
    h(i + 1);
}

int main()
{
    for (int i = 0; i < 40; i++)
        f(i);
    std::printf("f %d g %d throws %d caught %d h %d\n", f_calls, g_calls, throws, caught_calls, h_calls);
    return 0;
}
