/* namesake_main.cpp's shared library: its own `work(int)`, a distinct
 * function with the same name as the executable's. */
static volatile long lib_sink;
namespace {
__attribute__((noinline)) void work(int n) { for (int i = 0; i < n; i++) lib_sink += i; }
}
void lib_entry(int n) { work(n); work(n); }
