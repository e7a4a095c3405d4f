/* misc dl <plugin.so>   dlopen, call and dlclose the plugin twice, then
                         chdir into a new directory before exit
   misc args <arg>...    prints its arguments (one may hold a newline) */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((noinline)) static long load_and_call(const char *path, long n)
{
   void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
   if (!h) { printf("dlopen failed\n"); return -1; }
   long (*entry)(long) = (long (*)(long))dlsym(h, "plugin_entry");
   long r = entry ? entry(n) : -2;
   dlclose(h);
   return r;
}

int main(int argc, char **argv)
{
   if (argc > 2 && strcmp(argv[1], "dl") == 0) {
      long a = load_and_call(argv[2], 100);
      long b = load_and_call(argv[2], 200);
      mkdir("elsewhere", 0755);
      int rc = chdir("elsewhere");
      printf("misc dl: %ld %ld chdir %d\n", a, b, rc);
      return 0;
   }
   for (int i = 1; i < argc; i++) printf("arg %d: [%s]\n", i, argv[i]);
   return 0;
}
