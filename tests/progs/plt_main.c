/* Calls into a shared library through lazily bound PLT entries. */
#include <stdio.h>
int lib_work(int x);
__attribute__((noinline)) int caller_one(int x) { return lib_work(x); }
__attribute__((noinline)) int caller_two(int x) { return lib_work(x) + lib_work(x + 2); }
int main(void) { printf("plt: %d\n", caller_one(1) + caller_two(2) + caller_one(3)); return 0; }
