/* Run-time generated code: small x86-64 functions written into anonymous
 * mappings and called, some calling back into C. One mapping is written
 * read-write and then made read-execute; the other stays read-write-execute
 * and one of its functions is rewritten between calls (so a stale
 * translation would print another sum). The program counts the callbacks
 * per calling JIT function itself; with an argument, it writes the JIT
 * functions' addresses to that file ("name 0x..." lines). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

enum { FROM_ONCE = 1, FROM_LOOP = 2 };
enum { LEAF_CALLS = 50, ONCE_CALLS = 20, LOOP_CALLS = 10, LOOP_N = 3, REWRITES = 5, CONST_CALLS = 3 };

static long callbacks_from[3];

__attribute__((noinline)) void callback(long who)
{
   callbacks_from[who]++;
}

typedef long (*fn2)(long, long);
typedef long (*fn1)(long);
typedef long (*fn0)(void);

static unsigned char* emit(unsigned char* p, const void* bytes, size_t n)
{
   memcpy(p, bytes, n);
   return p + n;
}

static unsigned char* emit_callback_call(unsigned char* p, long who)
{
   uint64_t target = (uint64_t)(uintptr_t)callback;
   uint32_t arg = (uint32_t)who;
   p = emit(p, "\xbf", 1);                 /* mov $who, %edi */
   p = emit(p, &arg, 4);
   p = emit(p, "\x48\xb8", 2);             /* movabs $callback, %rax */
   p = emit(p, &target, 8);
   return emit(p, "\xff\xd0", 2);          /* call *%rax */
}

/* leaf(a, b) = a + b */
static unsigned char* emit_leaf(unsigned char* p)
{
   return emit(p, "\x48\x8d\x04\x37\xc3", 5);   /* lea (%rdi,%rsi),%rax; ret */
}

/* once(): callback(FROM_ONCE) */
static unsigned char* emit_once(unsigned char* p)
{
   p = emit(p, "\x48\x83\xec\x08", 4);          /* sub $8, %rsp */
   p = emit_callback_call(p, FROM_ONCE);
   return emit(p, "\x48\x83\xc4\x08\xc3", 5);   /* add $8, %rsp; ret */
}

/* loop(n): n times callback(FROM_LOOP) */
static unsigned char* emit_loop(unsigned char* p)
{
   p = emit(p, "\x53\x89\xfb", 3);              /* push %rbx; mov %edi, %ebx */
   unsigned char* top = p;
   p = emit_callback_call(p, FROM_LOOP);
   p = emit(p, "\xff\xcb\x75", 3);              /* dec %ebx; jnz top */
   *p = (unsigned char)(top - (p + 1));
   p++;
   return emit(p, "\x5b\xc3", 2);               /* pop %rbx; ret */
}

/* constant() = value */
static void emit_constant(unsigned char* p, uint32_t value)
{
   p = emit(p, "\xb8", 1);                      /* mov $value, %eax */
   p = emit(p, &value, 4);
   emit(p, "\xc3", 1);                          /* ret */
}

static void* map(int prot)
{
   void* m = mmap(NULL, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
   if (m == MAP_FAILED) {
      perror("mmap");
      return NULL;
   }
   return m;
}

int main(int argc, char** argv)
{
   unsigned char* rx = map(PROT_READ | PROT_WRITE);
   unsigned char* rwx = map(PROT_READ | PROT_WRITE | PROT_EXEC);
   if (!rx || !rwx) return 1;
   unsigned char* leaf = rx;
   unsigned char* once = rx + 64;
   unsigned char* loop = rx + 128;
   unsigned char* constant = rwx + 256;
   emit_leaf(leaf);
   emit_once(once);
   emit_loop(loop);
   if (mprotect(rx, 4096, PROT_READ | PROT_EXEC)) {
      perror("mprotect");
      return 1;
   }
   if (argc > 1) {
      FILE* f = fopen(argv[1], "w");
      if (!f) return 1;
      fprintf(f, "leaf %p\nonce %p\nloop %p\nconstant %p\n", leaf, once, loop, constant);
      fclose(f);
   }

   long sum = 0;
   for (int i = 0; i < LEAF_CALLS; i++) sum += ((fn2)leaf)(i, 1);
   for (int i = 0; i < ONCE_CALLS; i++) ((fn0)once)();
   for (int i = 0; i < LOOP_CALLS; i++) ((fn1)loop)(LOOP_N);
   long constants = 0;
   for (int r = 0; r < REWRITES; r++) {
      emit_constant(constant, 1000u * (r + 1));
      for (int i = 0; i < CONST_CALLS; i++) constants += ((fn0)constant)();
   }
   printf("calls leaf %d once %d loop %d constant %d\n", LEAF_CALLS, ONCE_CALLS, LOOP_CALLS,
          REWRITES * CONST_CALLS);
   printf("leaf sum %ld\n", sum);
   printf("callbacks from once %ld\n", callbacks_from[FROM_ONCE]);
   printf("callbacks from loop %ld\n", callbacks_from[FROM_LOOP]);
   printf("constants %ld\n", constants);
   return 0;
}
