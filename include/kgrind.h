/* kgrind.h: client requests of kgrind, the k-calling-context profiler.

   Include it in a program to mark a region of interest or to log the
   calling context it is in. Outside Valgrind the requests cost a few
   instructions and do nothing (KGRIND_CURRENT_CONTEXT() and
   KGRIND_CURRENT_SITE_CONTEXT() return 0).

   kgrind also honours callgrind.h's requests (CALLGRIND_DUMP_STATS and the
   others) unchanged. See docs/regions.md in kgrind's sources.

   This file is in the public domain (no copyright claimed): programs may
   include it whatever their licence. */

#ifndef __KGRIND_H
#define __KGRIND_H

#include "valgrind.h"

/* The order below is an ABI: add new requests at the end only. The first
   six follow callgrind.h's order. */
typedef
   enum {
      VG_USERREQ__KG_DUMP_STATS = VG_USERREQ_TOOL_BASE('K','G'),
      VG_USERREQ__KG_ZERO_STATS,
      VG_USERREQ__KG_TOGGLE_COLLECT,
      VG_USERREQ__KG_DUMP_STATS_AT,
      VG_USERREQ__KG_START_INSTRUMENTATION,
      VG_USERREQ__KG_STOP_INSTRUMENTATION,
      VG_USERREQ__KG_CURRENT_CONTEXT,
      VG_USERREQ__KG_CURRENT_SITE_CONTEXT
   } Vg_KGrindClientRequest;

/* Writes a profile file (kgrind.out.<pid>.<n>) of what was counted since
   the last dump or zeroing, then zeroes the counters. */
#define KGRIND_DUMP_STATS                                          \
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__KG_DUMP_STATS,       \
                                  0, 0, 0, 0, 0)

/* The same, with a reason written in the file's "desc: Trigger:" line. */
#define KGRIND_DUMP_STATS_AT(reason)                               \
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__KG_DUMP_STATS_AT,    \
                                  (reason), 0, 0, 0, 0)

/* Zeroes the counters (the calling contexts go on). */
#define KGRIND_ZERO_STATS                                          \
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__KG_ZERO_STATS,       \
                                  0, 0, 0, 0, 0)

/* Switches collection off if it is on, on if it is off. */
#define KGRIND_TOGGLE_COLLECT                                      \
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__KG_TOGGLE_COLLECT,   \
                                  0, 0, 0, 0, 0)

/* Instrumentation on and off (--instr-atstart=no starts with it off). */
#define KGRIND_START_INSTRUMENTATION                                      \
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__KG_START_INSTRUMENTATION,   \
                                  0, 0, 0, 0, 0)

#define KGRIND_STOP_INSTRUMENTATION                                       \
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__KG_STOP_INSTRUMENTATION,    \
                                  0, 0, 0, 0, 0)

/* An id of the calling thread's current k-context (the function calling
   it and its k callers), stable in this run: `kgrind_annotate
   --context-id=ID kgrind.out.<pid>` names it. 0 outside kgrind. */
#define KGRIND_CURRENT_CONTEXT()                                          \
  ((unsigned long)VALGRIND_DO_CLIENT_REQUEST_EXPR(0,                      \
      VG_USERREQ__KG_CURRENT_CONTEXT, 0, 0, 0, 0, 0))

/* The same k-context with the call sites between its levels: the id tells
   apart the calls that reached the function from different lines (or
   call instructions), and `kgrind_annotate --context-id=ID` names it with
   each caller's calling line, `main:12 > foo:30 > bar`. Ids of both
   requests are one numbering. 0 outside kgrind. */
#define KGRIND_CURRENT_SITE_CONTEXT()                                     \
  ((unsigned long)VALGRIND_DO_CLIENT_REQUEST_EXPR(0,                      \
      VG_USERREQ__KG_CURRENT_SITE_CONTEXT, 0, 0, 0, 0, 0))

#endif /* __KGRIND_H */
