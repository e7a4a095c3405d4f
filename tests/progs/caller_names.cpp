// C++ functions whose names have what short names drop or keep: operators
// (call, shift, comparison, conversion), a lambda, an anonymous namespace,
// const and ref-qualified methods, a function template with its return
// type, overloads. Each calls leaf(), so each is a caller in a context.
#include <cstdio>
#include <vector>

volatile long sink;
__attribute__((noinline)) void leaf(long x) { sink += x; }

namespace {
struct Acc {
   long v = 0;
   __attribute__((noinline)) void operator()(long x) { leaf(x); v += x; }
   __attribute__((noinline)) Acc& operator<<(long x) { leaf(x); v += x; return *this; }
   __attribute__((noinline)) bool operator<(const Acc& o) const { leaf(1); return v < o.v; }
   __attribute__((noinline)) explicit operator bool() const { leaf(2); return v != 0; }
   __attribute__((noinline)) long get() const & { leaf(3); return v; }
   __attribute__((noinline)) long get() && { leaf(4); return v; }
};
}

template <typename T>
__attribute__((noinline)) std::vector<T> twice(T x) { leaf(5); return {x, x}; }

__attribute__((noinline)) long over(int x) { leaf(6); return x; }
__attribute__((noinline)) long over(double x) { leaf(7); return (long)x; }

int main()
{
   Acc a, b;
   auto lam = [&](long x) __attribute__((noinline)) { leaf(x); };
   for (long i = 0; i < 10; i++) {
      a(i);
      b << i;
      lam(i);
   }
   long r = (a < b) + (bool)a + a.get() + Acc().get() + twice<int>(3).size() + twice<long>(4).size() + over(1) + over(2.0);
   std::printf("%ld\n", r + sink);
   return 0;
}
