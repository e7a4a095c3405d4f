#include "kg_systime.h"
#include "kg_events.h"
#include "kg_options.h"
#include "kg_runtime.h"

extern "C" {
ULong* kg_syscall_slots;
}

namespace kg {

namespace {

// A thread's system call in progress: its counters and its start.
struct SyscallStart {
   ULong* slots;
   ULong* clock;    // the thread's event clock (kg_event_clock)
   ULong elapsed;   // in sysTime's unit
   ULong cpu;       // ns of the thread's CPU time (nsec)
};
SyscallStart* started;   // by thread id, VG_N_THREADS

ULong nanoseconds(vki_clockid_t clock)
{
   struct vki_timespec t;
   VG_(clock_gettime)(&t, clock);
   return (ULong)t.tv_sec * 1000000000ULL + (ULong)t.tv_nsec;
}

// Monotonic clocks: a system call's time is never negative.
ULong elapsed_now()
{
   switch (clo.collect_systime) {
   case kSysTimeMsec: return VG_(read_millisecond_timer)();
   case kSysTimeUsec: return nanoseconds(VKI_CLOCK_MONOTONIC) / 1000;
   default: return nanoseconds(VKI_CLOCK_MONOTONIC);
   }
}

} // namespace

Bool is_syscall_end(IRJumpKind jk)
{
   switch (jk) {
   case Ijk_Sys_syscall: case Ijk_Sys_int32: case Ijk_Sys_int128: case Ijk_Sys_int129:
   case Ijk_Sys_int130: case Ijk_Sys_int145: case Ijk_Sys_int210: case Ijk_Sys_sysenter:
      return True;
   default:
      return False;
   }
}

void systime_init()
{
   if (clo.collect_systime == kSysTimeNo) return;
   started = (SyscallStart*)alloc_zeroed(VG_N_THREADS * sizeof(SyscallStart), "kg.systime");
}

void systime_pre(ThreadId tid)
{
   if (!started) return;
   SyscallStart& s = started[tid];
   s.slots = kg_syscall_slots;
   kg_syscall_slots = nullptr;
   if (!s.slots) return;
   s.clock = kg_event_clock;   // the calling thread's: it made the call, and runs
   s.elapsed = elapsed_now();
   if (clo.collect_systime == kSysTimeNsec) s.cpu = nanoseconds(VKI_CLOCK_THREAD_CPUTIME_ID);
}

void systime_post(ThreadId tid)
{
   if (!started || !started[tid].slots) return;
   SyscallStart& s = started[tid];
   ULong elapsed = elapsed_now() - s.elapsed;
   s.slots[0]++;
   s.slots[1] += elapsed;
   s.clock[kEvSysCount]++;
   s.clock[kEvSysTime] += elapsed;
   if (clo.collect_systime == kSysTimeNsec) {
      ULong cpu = nanoseconds(VKI_CLOCK_THREAD_CPUTIME_ID) - s.cpu;
      s.slots[2] += cpu;
      s.clock[kEvSysCpuTime] += cpu;
   }
   s.slots = nullptr;
}

} // namespace kg
