// Names a user reads (tests/test_annotate_export.py): templates, operators,
// const members, a lambda, an anonymous namespace; their demangled names
// hold spaces, commas, brackets and parameter lists.
#include <cstdio>
#include <map>
#include <vector>

namespace {
struct Point {
   long x, y;
   __attribute__((noinline)) long area() const { return x * y; }
   __attribute__((noinline)) bool operator<(const Point& o) const { return area() < o.area(); }
};
}

template <typename T, typename U>
__attribute__((noinline)) long sum_pairs(const std::map<T, U>& m)
{
   long s = 0;
   for (const auto& kv : m) s += kv.first + kv.second;
   return s;
}

int main()
{
   std::vector<Point> v;
   for (long i = 0; i < 50; i++) v.push_back(Point{i, 50 - i});
   long less = 0;
   for (size_t i = 1; i < v.size(); i++) less += v[i - 1] < v[i];
   std::map<int, long> m;
   for (int i = 0; i < 40; i++) m[i] = 2L * i;
   auto twice = [](long a) __attribute__((noinline)) { return 2 * a; };
   std::printf("%ld %ld %ld\n", less, sum_pairs(m), twice(less));
   return 0;
}
