/* Four coroutines that switch directly to each other in a ring (no
   scheduler on a stack of its own between them), each yielding from 3 to 6
   nested calls deep; the last yield of a generation goes back to main.
   Each generation's coroutines are abandoned suspended, their stacks freed
   (or given up), and the next generation's stacks are a little smaller
   (memory of the old ones, at other offsets; pool: the same).
   argv: rounds per generation, generations, where the stacks are
     heap      malloc'd: all in the heap's one mapping, each above the
               one before
     carve     carved from one mmap that lives on, each below the one
               before (a new coroutine's stack lies below the running one)
     pool      a static array of COS stacks of the full size, the same in
               every generation (a new coroutine's frames where a dead
               one's lay, at the same addresses)
     register  malloc'd and told to Valgrind (VALGRIND_STACK_REGISTER, and
               VALGRIND_STACK_DEREGISTER before the free)
     mmap      an mmap each, below a PROT_NONE guard page: separate mappings
     local     carved from an array in main's frame (the thread's own
               stack), registered as "register" does
   and how they switch: swap (swapcontext), asm (a minimal amd64 switch
   that saves the callee-saved registers and SP, and returns on the other
   stack), jump (the same, but it pops the return address and jumps to
   it, as boost.context's jump_fcontext does), or longjmp (setjmp, then
   longjmp to the other coroutine's setjmp point; a coroutine's first run
   by swapcontext). Prints how often each function ran. */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <valgrind/valgrind.h>

#define COS 4
#define STACK (64 * 1024)
#define GUARD 4096
#define CARVED (COS * STACK)

typedef struct {
   ucontext_t uc;     /* swap */
   void* sp;          /* asm: the SP its registers were saved at */
   char* base;
   size_t size;
   unsigned stack_id; /* register */
   jmp_buf jb;        /* longjmp */
   int started;       /* longjmp: it has a setjmp point */
} Coroutine;

static Coroutine main_co, co[COS];
static int running, use_asm, use_jump, use_longjmp;
static long rounds, yields_left;
static long count_yield, count_entry;
#include "co_work.h"

#include "co_switch.h"

/* void co_jump(void** save_sp, void* to_sp): as co_switch, with a jump */
void co_jump(void** save_sp, void* to_sp);
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl co_jump\n"
        ".type co_jump, @function\n"
        "co_jump:\n"
        "  push %rbp\n  push %rbx\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
        "  mov %rsp, (%rdi)\n"
        "  mov %rsi, %rsp\n"
        "  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbx\n  pop %rbp\n"
        "  pop %rcx\n"
        "  jmp *%rcx\n"
        ".size co_jump, .-co_jump\n");
#else
void co_jump(void** save_sp, void* to_sp) { (void)save_sp; (void)to_sp; abort(); }
#endif

static void switch_to(Coroutine* from, Coroutine* to)
{
   if (use_longjmp) {
      if (setjmp(from->jb)) return;
      if (to->started) longjmp(to->jb, 1);
      to->started = 1;
   }
   if (use_jump) co_jump(&from->sp, to->sp);
   else if (use_asm) co_switch(&from->sp, to->sp);
   else swapcontext(&from->uc, &to->uc);
}

__attribute__((noinline)) void yield_(void)
{
   count_yield++;
   Coroutine* from = &co[running];
   Coroutine* to = --yields_left ? &co[running = (running + 1) % COS] : &main_co;
   switch_to(from, to);
}


/* Entered by the first switch to a coroutine; never returns. */
__attribute__((noinline)) void co_entry(void)
{
   count_entry++;
   co_main(running);
   abort();
}

static char* local_area;   /* local: COS stacks in main's frame */
static char* carved_area;  /* carve: an mmap of COS stacks, made once */
static char pool[COS][STACK] __attribute__((aligned(16)));

static int registers(const char* where) { return strcmp(where, "register") == 0 || strcmp(where, "local") == 0; }

static char* new_stack(const char* where, size_t size, int i)
{
   if (strcmp(where, "local") == 0) return local_area + (size_t)i * STACK;
   if (strcmp(where, "pool") == 0) return pool[i];
   if (strcmp(where, "carve") == 0) {
      if (!carved_area) carved_area = mmap(NULL, CARVED, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      return carved_area == MAP_FAILED ? NULL : carved_area + CARVED - (size_t)(i + 1) * size;
   }
   if (strcmp(where, "mmap") != 0) return malloc(size);
   char* m = mmap(NULL, size + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
   if (m == MAP_FAILED) return NULL;
   mprotect(m, GUARD, PROT_NONE);
   return m + GUARD;
}

static void free_stack(const char* where, Coroutine* c)
{
   if (registers(where)) VALGRIND_STACK_DEREGISTER(c->stack_id);
   if (strcmp(where, "mmap") == 0) munmap(c->base - GUARD, c->size + GUARD);
   else if (strcmp(where, "heap") == 0 || strcmp(where, "register") == 0) free(c->base);
}

/* The first switch to an asm (jump) coroutine pops zeroed registers and
   returns (jumps) into co_entry, whose return address slot holds 0. */
static void prepare_asm(Coroutine* c)
{
   void** sp = (void**)(((uintptr_t)c->base + c->size) & ~(uintptr_t)15);
   *--sp = 0;
   *--sp = (void*)co_entry;
   for (int r = 0; r < 6; r++) *--sp = 0;
   c->sp = sp;
}

static int start(const char* where, Coroutine* c, size_t size)
{
   if (strcmp(where, "pool") == 0) size = STACK;
   c->size = size;
   c->started = 0;
   c->base = new_stack(where, size, (int)(c - co));
   if (!c->base) return 0;
   if (registers(where)) c->stack_id = VALGRIND_STACK_REGISTER(c->base, c->base + size);
   if (use_asm) {
      prepare_asm(c);
   } else {
      getcontext(&c->uc);
      c->uc.uc_stack.ss_sp = c->base;
      c->uc.uc_stack.ss_size = size;
      c->uc.uc_link = NULL;
      makecontext(&c->uc, co_entry, 0);
   }
   return 1;
}

int main(int argc, char** argv)
{
   if (argc != 5) return 2;
   rounds = atol(argv[1]);
   long gens = atol(argv[2]);
   const char* where = argv[3];
   use_jump = strcmp(argv[4], "jump") == 0;
   use_longjmp = strcmp(argv[4], "longjmp") == 0;
   main_co.started = 1;
   use_asm = use_jump || strcmp(argv[4], "asm") == 0;
#if !defined(__x86_64__)
   if (use_asm) return 2;   /* amd64 switches */
#endif
   if (rounds < 1 || gens < 1 || gens > 8) return 2;
   char local[COS * STACK];
   local_area = local;
   for (long g = 0; g < gens; g++) {
      for (int i = 0; i < COS; i++)
         if (!start(where, &co[i], STACK - (size_t)g * 3 * 1024)) return 3;
      running = 0;
      yields_left = rounds * COS;
      switch_to(&main_co, &co[0]);
      for (int i = 0; i < COS; i++) free_stack(where, &co[i]);
   }
   printf("co_ring: entry %ld leaf %ld yield %ld nest %ld\n", count_entry, count_leaf, count_yield, count_nest);
   return 0;
}
