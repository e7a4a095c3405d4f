// std::map's find, operator[] and insert and std::vector's push_back and
// operator[], all inlined at -O2 (tests/test_inline_names.py): inlined
// functions of one short name in several classes (std::map::find and the
// std::_Rb_tree::find it calls; lower_bound, operator[], size, begin).
#include <cstdio>
#include <map>
#include <vector>

std::map<int, int> table;
std::vector<int> values;

extern "C" __attribute__((noinline)) void fill(int n)
{
   for (int i = 0; i < n; i++) {
      table.insert({i, i});
      values.push_back(i);
   }
}

extern "C" __attribute__((noinline)) long lookups(int n)
{
   long s = 0;
   for (int i = 0; i < n; i++) {
      auto it = table.find(i);
      if (it != table.end()) s += it->second;
      s += table[i % 7];
   }
   return s;
}

int main()
{
   fill(1000);
   long s = lookups(2000);
   for (size_t i = 0; i < values.size(); i++) s += values[i];
   std::printf("%ld\n", s);
   return 0;
}
