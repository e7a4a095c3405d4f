/* Calls into libc through every kind of PLT stub: .plt (lazy or bound at
   start with -z now), .plt.sec (IBT: -fcf-protection -z ibtplt) and
   .plt.got (puts: its address is also taken through the GOT). Known call
   counts: strlen 10, printf 1, puts 1 (and once through the pointer, which
   holds puts itself, no stub), malloc 1, free 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int (*volatile put_ptr)(const char *);
__attribute__((noinline)) size_t work(const char *s, int n)
{
   size_t t = 0;
   for (int i = 0; i < n; i++)
      t += strlen(s + (i & 3));
   printf("t=%zu\n", t);
   puts("direct");
   put_ptr("indirect");
   return t;
}
int main(void)
{
   put_ptr = puts;
   char *p = malloc(16);
   strcpy(p, "hello world");
   work(p, 10);
   free(p);
   return 0;
}
