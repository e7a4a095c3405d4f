// Command-line options of the tool.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// k = kInfiniteK builds the calling context tree.
const UInt kInfiniteK = 0xFFFFFFFFu;
const UInt kMaxFuncPatterns = 64;

// --mode: function k-SFs, or basic-block k-SFs per function / per thread.
enum Mode : UInt { kModeFunc = 0, kModeIntra = 1, kModeInter = 2 };

// --collect-systime: system calls' count and time; the unit of sysTime.
enum SysTime : UInt { kSysTimeNo = 0, kSysTimeMsec, kSysTimeUsec, kSysTimeNsec };

// --tiering: which superblocks start at tier 1 (docs/design/tiers.md):
// none; those that step inlined levels (their steps in the helper until
// they are hot); every one (physical frames only).
enum Tiering : UInt { kTieringNo = 0, kTieringLevels, kTieringYes };

// --I1, --D1, --LL: a cache's size, associativity and line size as given
// (checked by the cache model once the options are read: kg_events.cpp).
struct CacheOption {
   ULong size;
   ULong assoc;
   ULong line;
   Bool given;
};

struct Options {
   const HChar* out_file;        // template; %p expands to the pid
   UInt k;                       // --k
   UInt view_k;                  // --view-k: callers in the contexts of the
                                 // callgrind body (per-line costs); <= k
   Bool view_k_given;
   Mode mode;                    // --mode
   Bool roll_loops;              // --roll-loops (implies k = inf)
   Bool k_given;                 // --k appeared on the command line
   const HChar* dump_blocks;     // --dump-blocks=<file> (debugging), or nullptr
   Bool join_threads;            // --join-threads
   Bool separate_threads;        // --separate-threads: one file a thread
   Bool unroll_simple_rec;       // --unroll-simple-rec
   Bool dump_instr;              // --dump-instr: positions: instr line (block modes: always)
   Bool dump_instr_given;
   Bool collect_jumps;           // --collect-jumps: jump=/jcnd= lines (block modes: default yes)
   Bool collect_jumps_given;
   Bool inline_frames;           // --inline-frames: inlined functions as context levels [yes
                                 // where they can be: resolved by check_options]
   Bool inline_frames_given;
   // --inline-levels=frames|records: runs of inlined code count with level
   // frames, or per physical context with their levels derived
   // (kg_frameless_levels.h) [records where they can be: resolved by
   // check_options into inline_records]
   Bool inline_records;
   Bool inline_levels_given;
   Bool count_instr;             // counters per instruction: --dump-instr, or
                                 // --collect-jumps (each exit's count); set by check_options
   Bool cache_sim;               // --cache-sim: I1/D1/LL simulation
   Bool branch_sim;              // --branch-sim: branch predictor simulation
   Bool collect_bus;             // --collect-bus: atomic instructions (Ge)
   Bool collect_data;            // --collect-data: data reads and writes (Dr Dw), no simulation
   SysTime collect_systime;      // --collect-systime: sysCount sysTime (sysCpuTime)
   CacheOption i1, d1, ll;       // --I1, --D1, --LL
   UInt n_func_patterns;         // --funcs, split at commas, and --fn-skip
   const HChar* func_patterns[kMaxFuncPatterns];   // without a leading '!'
   Bool func_excluded[kMaxFuncPatterns];           // '!' in --funcs, or --fn-skip
   Bool func_skipped[kMaxFuncPatterns];            // from --fn-skip (its warning names it)
   Tiering tiering;              // --tiering: cold blocks at tier 1 (docs/design/tiers.md)
   UInt tier_threshold;          // --tier-threshold: a block's tier-1 runs before tier 2
};

extern Options clo;

// The options but the region options (kg_regions.h), which kg_main.cpp's
// callbacks for VG_(needs_command_line_options) take first.
Bool process_option(const HChar* arg);
// Checks of option combinations, once all options are read.
void check_options();
inline Bool block_mode() { return clo.mode != kModeFunc; }
// Whether the body's contexts are shallower than the k-SF's: then each
// thread keeps a second forest at view_k for them (activity/layouts.cpp).
inline Bool separate_view() { return clo.view_k != clo.k; }
// Whether an option asks for events beyond Ir (kg_events.h).
inline Bool events_asked()
{
   return clo.cache_sim || clo.branch_sim || clo.collect_bus || clo.collect_data || clo.collect_systime;
}

// Whether inlined functions are context levels: function mode, without
// --collect-jumps (a jump's count is the difference of two flush points'
// counts in one context), with the core's inline records (check_options
// turns the default off elsewhere; an explicit yes there is an error).
inline Bool inline_frames_on() { return clo.inline_frames; }
void print_usage();
void print_debug_usage();

// Whether a (demangled) function name is traced: it matches a pattern of
// --funcs (or, without any, `by_default` says), and no exclusion ('!' in
// --funcs, --fn-skip). Records which patterns matched, for the end-of-run
// warning.
Bool name_is_traced(const HChar* name, Bool by_default);
// Patterns of --funcs and --fn-skip that never matched (for the warning):
// their indexes into clo.func_patterns.
UInt unmatched_patterns(UInt* out, UInt max);

} // namespace kg
