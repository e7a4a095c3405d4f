/* Two distinct functions named `(anonymous namespace)::work(int)`: one
 * here, called 3 times by main, and one in namesake_lib.cpp's shared
 * library, called twice by lib_entry, which main calls once.  The profile
 * names them by object (`... [namesake_main]`, `... [libnamesake.so]`);
 * kgrind_annotate's views must keep them apart (tests/test_annotate_views.py). */
#include <cstdio>
void lib_entry(int n);
static volatile long sink;
namespace {
__attribute__((noinline)) void work(int n) { for (int i = 0; i < n; i++) sink ^= i; }
}
int main()
{
   for (int i = 0; i < 3; i++) work(1000);
   lib_entry(700);
   std::printf("%ld\n", sink);
   return 0;
}
