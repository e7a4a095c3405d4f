/* Code generated at run time into an anonymous RWX mmap: a function that
   calls back into the program (jit(x) = triple(x) + imm), called 1,000
   times; with "rewrite", its immediate is then patched 20 times, each
   followed by 200 calls, so stale translations would give a wrong sum. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

__attribute__((noinline)) int triple(int x) { return 3 * x; }

static unsigned char *emit(unsigned char *p, const void *bytes, size_t n)
{
   memcpy(p, bytes, n);
   return p + n;
}

/* sub $8,%rsp; movabs $triple,%rax; call *%rax; add $8,%rsp;
   add $imm,%eax; ret. Returns where the immediate is. */
static int32_t *generate(unsigned char *code)
{
   uint64_t target = (uint64_t)(uintptr_t)triple;
   unsigned char *p = code;
   p = emit(p, "\x48\x83\xec\x08\x48\xb8", 6);
   p = emit(p, &target, 8);
   p = emit(p, "\xff\xd0\x48\x83\xc4\x08\x05", 7);
   int32_t *imm = (int32_t *)p;
   p = emit(p, "\0\0\0\0\xc3", 5);
   return imm;
}

__attribute__((noinline)) static long run(int (*fn)(int), int calls)
{
   long sum = 0;
   for (int i = 0; i < calls; i++) sum += fn(i);
   return sum;
}

int main(int argc, char **argv)
{
   unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
   if (code == MAP_FAILED) { perror("mmap"); return 1; }
   int32_t *imm = generate(code);
   int (*fn)(int) = (int (*)(int))(void *)code;
   *imm = 5;
   long sum = run(fn, 1000);
   if (argc > 1 && strcmp(argv[1], "rewrite") == 0)
      for (int k = 0; k < 20; k++) {
         *(volatile int32_t *)imm = 1000 * k;
         sum += run(fn, 200);
      }
   printf("jit: %ld\n", sum);
   return 0;
}
