// Instrumentation of superblocks.
//
// Every superblock starts with inline IR that keeps the shadow stack and the
// block's counters right (docs/design/shadow-stacks.md,
// docs/design/counting.md):
//   - a function's first block (traced, with a symbol) pushes the frame that
//     the top frame's transition predicts for its function (kids),
//     kg_entry_fixup repairing a wrong prediction; then,
//     if kg_now->ctx differs from the block's cached context, calls
//     kg_refresh_counters for the counters of (context, block);
//   - PLT stubs and untraced functions' first blocks call kg_block_start;
//   - any other block calls kg_block_start only if kg_now->ctx differs from
//     its cached context (after a call, ctx is kCallPending, which no block
//     caches).
// Frames die only when SP rises above them: superblocks that may raise SP
// check it after the write (before later side exits and at their end) and
// call kg_unwind when it rose above the top frame. Blocks ending in a call,
// and direct jumps into another function's first instruction (tail calls),
// make the call pending (kg_now->ctx = kCallPending); blocks ending in a
// return pop the top frame inline when the ret left SP just above its
// return address.
// Instructions are then counted in groups: every instruction since the
// previous flush point is added to its (context, line) counter, and to the
// thread's Ir, just before each side exit (except those only a fault takes:
// faults_only) and at the end of the block. A taken side exit never counts
// the instructions after it. In the common case
// (same context, no call or return) a block runs no helper at all.
// The tool's data is addressed from base registers (data_bases).
//
// One translation unit made of the files in instrument/, each owning one
// concern, included in dependency order: they share the IR builder and
// file-local helpers, which stay local to the unit.
#include "kg_instrument.h"
#include "kg_hotpath.h"
#include "kg_blocks.h"
#include "kg_costs.h"
#include "kg_events.h"
#include "kg_activity.h"
#include "kg_inline_chains.h"
#include "kg_machine_code.h"
#include "kg_options.h"
#include "kg_regions.h"
#include "kg_systime.h"
#include "kg_tiers.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

#include "instrument/ir_builder.cpp"
#include "instrument/pending_counts.cpp"
#include "instrument/frame_clocks_ir.cpp"
#include "instrument/frameless_runs_ir.cpp"
#include "instrument/describe_block.cpp"
#include "instrument/frames_ir.cpp"
#include "instrument/link_register_ir.cpp"
#include "instrument/prologue.cpp"
#include "instrument/superblock_facts.cpp"
#include "instrument/block_modes_ir.cpp"
#include "instrument/events_ir.cpp"
#include "instrument/inline_runs_ir.cpp"
#include "instrument/tier_ir.cpp"
#include "instrument/superblock.cpp"
