// --collect-systime: each system call's count and elapsed time (and, with
// nsec, the thread's CPU time) charged to the (context, line) of the
// instruction that made it (docs/design/events.md). A superblock that ends
// in a system call stores the address of its event counters [sysCount,
// sysTime, sysCpuTime] in kg_syscall_slots; the core's system call
// callbacks take it per thread before the call and add to it after.
#pragma once
#include "kg_valgrind.h"

extern "C" {
// The event counters of the system call about to be made, or nullptr (set
// by instrumented code, taken by systime_pre).
extern ULong* kg_syscall_slots;
}

namespace kg {

// Whether a superblock's end makes a system call.
Bool is_syscall_end(IRJumpKind jk);

// After the options (with --collect-systime).
void systime_init();
// The core's callbacks around each system call of thread tid.
void systime_pre(ThreadId tid);
void systime_post(ThreadId tid);

} // namespace kg
