/* A shared library for lazy-binding tests. */
__attribute__((noinline)) int lib_inner(int x) { return x * 7 + 1; }
int lib_work(int x) { return lib_inner(x) + lib_inner(x + 1); }
