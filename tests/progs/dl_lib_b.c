// The other of dl_reload.c's libraries: a work() of another length.
static int mix(int s, int i) { return (s ^ (i * 5)) + 1; }
int work(int n)
{
   int s = 1;
   for (int i = 0; i < n; i++) s = mix(s, i);
   return s;
}
