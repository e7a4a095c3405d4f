// One of dl_reload.c's libraries: work() of its own source file.
static int step(int i) { return i * 3; }
int work(int n)
{
   int s = 0;
   for (int i = 0; i < n; i++) s += step(i);
   return s;
}
