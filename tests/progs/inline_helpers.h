static inline __attribute__((always_inline)) int clamp_add(int a, int b)
{
   int s = a + b;
   return s > 1000 ? 1000 : s;
}
