/* Go's runtime in miniature, on amd64: "goroutines" whose stacks lie in one
   mapping, each with a g whose first words are its stack's bounds, kept in
   R14 while it runs; a thread started the Go way (raw clone, its g in R9);
   gogo loads R14, SP and jumps; a goroutine parks by saving its return
   address and SP (as runtime.mcall) and a scheduler copies parked stacks
   to other memory (as runtime.copystack) before resuming them there.

   Goroutines A and B recurse `depth` deep through one function and park at
   the bottom, so their stacks have one shape. A runs on a second thread,
   in slot 0. Then main copies A's stack to slot 2, and B's into slot 0,
   which A's copy freed: B resumes at the very SP, and the very return
   address, where A was suspended. B returns up its recursion and ends; C
   recurses half as deep in slot 1, which B's copy freed, and parks; then
   A resumes in slot 2 and returns up its recursion. Before that, on the
   second thread (whose stack lies below the slots: gogo raises SP), D
   recurses 20 deep in a 2 KB stack and parks, and is copied to a 4 KB
   stack just below (as morestack grows Go's 2 KB stacks), where its old
   frames lie less than 4 KB above the SP it resumes at; it returns up its
   recursion. Every goroutine's calls are body > rec ... > leaf. argv:
   depth. Prints its own counts.

   With -DCGO, as a Go program linked with cgo: the second thread is
   started by pthread_create (on the same stack), and only gogo's name is
   Go's (runtime.gogo.abi0). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct g {
   uintptr_t lo, hi;                               /* Go's g.stack */
   uintptr_t sp, pc, rbx, rbp, r12, r13, r14, r15; /* where it goes on */
   uintptr_t goroutine;                            /* else a scheduler */
   long depth;
};

#ifdef CGO
#define GOGO "runtime.gogo.abi0"
#else
#define GOGO "gogo"
#endif

static const size_t kSlot = 256u << 10;
static struct g ga, gb, gc, gd, sched_main, sched_thread;
struct g* cur_g;       /* the running goroutine (park reads it) */
struct g* cur_sched;   /* the context park returns to */
static volatile int thread_done;
static long rec_calls, leaf_calls, body_calls;

/* gogo(to): runs `to` where it goes on. switch_to(save, to): saves the
   caller's context in save (its SP above the return address, which is its
   pc), then gogo(to). park(): saves the running goroutine in cur_g and goes
   on in cur_sched. go_clone(sp, g, fn): a thread started the Go way, on
   stack sp, running fn. */
void gogo(struct g* to) __asm__(GOGO);
void switch_to(struct g* save, struct g* to);
void park(void);
long go_clone(void* sp, struct g* g, void* (*fn)(void*));
__asm__(".text\n"
        ".globl " GOGO "\n.type " GOGO ",@function\n"
        GOGO ":\n"
        "  mov 32(%rdi), %rbx\n  mov 40(%rdi), %rbp\n  mov 48(%rdi), %r12\n"
        "  mov 56(%rdi), %r13\n  mov 72(%rdi), %r15\n"
        "  mov 64(%rdi), %r14\n  cmpq $0, 80(%rdi)\n  cmovne %rdi, %r14\n" /* a goroutine's g in R14 */
        "  mov 16(%rdi), %rsp\n  jmp *24(%rdi)\n"
        ".size " GOGO ",.-" GOGO "\n"
        ".globl switch_to\n.type switch_to,@function\n"
        "switch_to:\n"
        "  mov (%rsp), %rax\n  mov %rax, 24(%rdi)\n  lea 8(%rsp), %rax\n  mov %rax, 16(%rdi)\n"
        "  mov %rbx, 32(%rdi)\n  mov %rbp, 40(%rdi)\n  mov %r12, 48(%rdi)\n  mov %r13, 56(%rdi)\n"
        "  mov %r14, 64(%rdi)\n  mov %r15, 72(%rdi)\n"
        "  mov %rsi, %rdi\n  jmp " GOGO "\n"
        ".size switch_to,.-switch_to\n"
        ".globl park\n.type park,@function\n"
        "park:\n"
        "  mov cur_g(%rip), %rdi\n  mov cur_sched(%rip), %rsi\n  jmp switch_to\n"
        ".size park,.-park\n"
        ".globl go_clone\n.type go_clone,@function\n"
        "go_clone:\n"
        "  push %r12\n  mov %rdx, %r12\n  mov %rsi, %r9\n  mov %rdi, %rsi\n"
        "  mov $0x50f00, %edi\n  xor %edx, %edx\n  xor %r10d, %r10d\n  xor %r8d, %r8d\n"
        "  mov $56, %eax\n  syscall\n"
        "  test %rax, %rax\n  jz 1f\n  pop %r12\n  ret\n"
        "1:\n  call *%r12\n  mov $60, %eax\n  xor %edi, %edi\n  syscall\n"
        ".size go_clone,.-go_clone\n");

__attribute__((noipa)) static long leaf(long n)
{
   leaf_calls++;
   return n & 7;
}

__attribute__((noipa)) static long rec(long n)
{
   rec_calls++;
   if (n == 0) {
      park();   /* as runtime.morestack: the scheduler copies the stack */
      return leaf(0);
   }
   long r = rec(n - 1);
   return r + leaf(n);
}

/* A goroutine's function; it parks for good when done. */
__attribute__((noipa)) static void body(void)
{
   body_calls++;
   rec(cur_g->depth);
   park();
   abort();
}

__attribute__((noinline)) static void goexit(void) { abort(); }

/* g starts body on the stack [lo, lo + size). */
static void new_goroutine(struct g* g, char* lo, size_t size, long depth)
{
   memset(g, 0, sizeof *g);
   g->lo = (uintptr_t)lo;
   g->hi = (uintptr_t)lo + size;
   g->sp = g->hi - 8;
   *(uintptr_t*)g->sp = (uintptr_t)goexit;
   g->pc = (uintptr_t)body;
   g->goroutine = 1;
   g->depth = depth;
}

/* Runs g until it parks. */
static void run(struct g* sched, struct g* g)
{
   cur_sched = sched;
   cur_g = g;
   switch_to(sched, g);
}

/* Copies g's used stack to the end of [lo, lo + size), as copystack does. */
static void copy_stack(struct g* g, char* lo, size_t size)
{
   uintptr_t used = g->hi - g->sp, hi = (uintptr_t)lo + size;
   memcpy((void*)(hi - used), (void*)g->sp, used);
   g->sp = hi - used;
   g->lo = (uintptr_t)lo;
   g->hi = hi;
}

static char* slots;

static void* thread_main(void* arg)
{
   run(&sched_thread, &ga);
   new_goroutine(&gd, slots + 3 * kSlot + 6144, 2048, 20);
   run(&sched_thread, &gd);
   copy_stack(&gd, slots + 3 * kSlot, 4096);   /* 4 KB, just below */
   run(&sched_thread, &gd);
   __atomic_store_n(&thread_done, 1, __ATOMIC_RELEASE);
   return arg;
}

int main(int argc, char** argv)
{
   long depth = argc > 1 ? atol(argv[1]) : 300;
   slots = mmap(NULL, 4 * kSlot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
   if (slots == MAP_FAILED) return 1;
   new_goroutine(&ga, slots, kSlot, depth);
   new_goroutine(&gb, slots + kSlot, kSlot, depth);
   static char thread_stack[64 << 10] __attribute__((aligned(16)));
#ifdef CGO
   pthread_t thread;
   pthread_attr_t attr;
   if (pthread_attr_init(&attr) || pthread_attr_setstack(&attr, thread_stack, sizeof thread_stack) ||
       pthread_create(&thread, &attr, thread_main, NULL))
      return 1;
#else
   static struct g thread_g;
   thread_g.lo = (uintptr_t)thread_stack;
   thread_g.hi = (uintptr_t)(thread_stack + sizeof thread_stack);
   if (go_clone((void*)thread_g.hi, &thread_g, thread_main) < 0) return 1;
#endif
   while (!__atomic_load_n(&thread_done, __ATOMIC_ACQUIRE)) sched_yield();
   run(&sched_main, &gb);
   copy_stack(&ga, slots + 2 * kSlot, kSlot);
   copy_stack(&gb, slots, kSlot);   /* where A was, at A's SP */
   run(&sched_main, &gb);
   new_goroutine(&gc, slots + kSlot, kSlot, depth / 2);
   run(&sched_main, &gc);
   run(&sched_main, &ga);

   printf("go_copied_stacks: body %ld rec %ld leaf %ld\n", body_calls, rec_calls, leaf_calls);
   return 0;
}
