/* A shared object that misc.c loads with dlopen. */
__attribute__((noinline)) static long plugin_inner(long x) { return x * x; }
long plugin_entry(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) s += plugin_inner(i);
   return s;
}
