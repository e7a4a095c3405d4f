// Loads each library named on the command line in turn, calls its work()
// and unloads it, for three rounds: the libraries usually land at one
// address, one after another. Prints where work() was and what it returned.
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv)
{
   for (int round = 0; round < 3; round++) {
      for (int i = 1; i < argc; i++) {
         void* lib = dlopen(argv[i], RTLD_NOW);
         if (!lib) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
         }
         int (*work)(int) = (int (*)(int))dlsym(lib, "work");
         if (!work) return 2;
         printf("%d %p %d\n", i, (void*)work, work(1000 * i));
         dlclose(lib);
      }
   }
   return 0;
}
