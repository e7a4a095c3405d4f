// A C++ exception thrown through five frames, then more calls.
#include <cstdio>
#include <stdexcept>

__attribute__((noinline)) int level5(int x) { if (x > 2) throw std::runtime_error("deep"); return x; }
__attribute__((noinline)) int level4(int x) { return level5(x + 1) + 1; }
__attribute__((noinline)) int level3(int x) { return level4(x + 1) + 1; }
__attribute__((noinline)) int level2(int x) { return level3(x + 1) + 1; }
__attribute__((noinline)) int level1(int x) { return level2(x) + 1; }
__attribute__((noinline)) int after(int x) { return x * 2; }

int main()
{
   int caught = 0, s = 0;
   for (int i = 0; i < 10; i++) {
      try { s += level1(i); } catch (const std::exception& e) { caught++; }
      s += after(i);
   }
   std::printf("exceptions: caught %d sum %d\n", caught, s);
   return 0;
}
