// The activity layer (kg_activity.h, kg_hotpath.h): per-thread shadow stacks
// keyed by the stack pointer, driving each thread's k-SF.
//
// One translation unit made of the files in activity/, each owning one
// concern, included in dependency order. The helpers instrumented code calls
// (kg_block_start, kg_unwind, kg_block_entry, ...) run frame, transition,
// kid and stack code from several of them: in one unit the compiler inlines
// it into the helpers, where separate units would make each a call.
#include "kg_activity.h"
#include "kg_hotpath.h"
#include "kg_array_ops.h"
#include "kg_blocks.h"
#include "kg_costs.h"
#include "kg_events.h"
#include "kg_exit_costs.h"
#include "kg_call_edges.h"
#include "kg_counters.h"
#include "kg_counter_store.h"
#include "kg_inline_chains.h"
#include "kg_machine_code.h"
#include "kg_options.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"
#include "kg_tiers.h"
#include "core/packed_nodes.h"

#include "activity/thread_state.h"
#include "activity/pinned_slots.h"
#include "activity/layouts.cpp"
#include "activity/transitions.cpp"
#include "activity/event_clocks.cpp"
#include "activity/stacks.cpp"
#include "activity/frames.cpp"
#include "activity/suspended_stacks.cpp"
#include "activity/stack_switch.cpp"
#include "activity/kids.cpp"
#include "activity/tail_jumps.cpp"
#include "activity/ir_helpers.cpp"
#include "activity/tiers.cpp"
#include "activity/link_register_returns.cpp"
#include "activity/inline_frames.cpp"
#include "activity/frameless_levels.cpp"
#include "activity/block_modes.cpp"
#include "activity/counting.cpp"
#include "activity/threads.cpp"
#include "activity/context_ids.cpp"
#include "activity/ended_threads.cpp"
#include "activity/thread_profiles.cpp"
