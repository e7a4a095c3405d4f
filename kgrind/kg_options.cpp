#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

// Designated: every option not named here starts as 0, False or nullptr.
Options clo = {
   .out_file = "kgrind.out.%p",
   .k = 2,
   .view_k = 2,
   .mode = kModeFunc,
   .inline_frames = True,   // where it can be: check_inline_frames
   .inline_records = True,  // where they can be: check_inline_levels
   // docs/design/tiers.md: tiering every block was slower on the programs
   // it was for; inlined levels' steps pay where code runs a few times.
   .tiering = kTieringLevels,
   .tier_threshold = 1000,
};

namespace {

Bool pattern_matched[kMaxFuncPatterns];

// "--k=<n|inf>" (and --view-k): 0 .. 1000 or inf.
UInt parse_k(const HChar* arg, const HChar* option, const HChar* value)
{
   if (VG_STREQ(value, "inf")) return kInfiniteK;
   HChar* end = nullptr;
   Long k = VG_(strtoll10)(value, &end);
   if (value[0] == '\0' || *end != '\0' || k < 0 || k > 1000)
      VG_(fmsg_bad_option)(arg, "%s takes a whole number from 0 to 1000, or 'inf'\n", option);
   return (UInt)k;
}

void add_func_pattern(const HChar* arg, const HChar* option, const HChar* pattern, Bool skipped)
{
   Bool excluded = skipped || pattern[0] == '!';
   if (!skipped && excluded) pattern++;
   if (pattern[0] == '\0')
      VG_(fmsg_bad_option)(arg, "%s has an empty pattern (two commas, a comma at an end, or '!' alone)\n", option);
   if (clo.n_func_patterns == kMaxFuncPatterns)
      VG_(fmsg_bad_option)(arg, "--funcs and --fn-skip take at most %u patterns\n", kMaxFuncPatterns);
   clo.func_patterns[clo.n_func_patterns] = pattern;
   clo.func_excluded[clo.n_func_patterns] = excluded;
   clo.func_skipped[clo.n_func_patterns] = skipped;
   clo.n_func_patterns++;
}

// "--funcs=a,b*,!c": comma-separated globs (* and ?), matched against
// demangled names; a leading '!' excludes what it matches.
void parse_funcs(const HChar* arg, const HChar* value)
{
   if (value[0] == '\0') VG_(fmsg_bad_option)(arg, "--funcs needs at least one name or pattern\n");
   HChar* copy = kg::strdup(value);
   HChar* start = copy;
   for (HChar* p = copy;; p++) {
      if (*p != ',' && *p != '\0') continue;
      Bool last = *p == '\0';
      *p = '\0';
      add_func_pattern(arg, "--funcs", start, False);
      if (last) break;
      start = p + 1;
   }
}

// "--I1=<size>,<associativity>,<line size>": three whole numbers (the
// cache model checks that they make a cache: kg_events.cpp).
void parse_cache(const HChar* arg, const HChar* option, const HChar* value, CacheOption* c)
{
   ULong parts[3];
   const HChar* p = value;
   for (UInt i = 0; i < 3; i++) {
      HChar* end = nullptr;
      Long v = VG_(strtoll10)(p, &end);
      Bool digits = *p >= '0' && *p <= '9' && end - p <= 12;   // at most 12 digits: no overflow
      if (!digits || v < 0 || *end != (i < 2 ? ',' : '\0'))
         VG_(fmsg_bad_option)(arg, "%s takes <size>,<associativity>,<line size>: three whole numbers "
                              "(bytes, ways, bytes), e.g. %s=32768,8,64\n", option, option);
      parts[i] = (ULong)v;
      p = end + 1;
   }
   *c = { parts[0], parts[1], parts[2], True };
}

// "--tier-threshold=<n>": 1 .. 10^9 runs.
UInt parse_tier_threshold(const HChar* arg, const HChar* value)
{
   HChar* end = nullptr;
   Long n = VG_(strtoll10)(value, &end);
   Bool digits = value[0] >= '0' && value[0] <= '9' && end - value <= 10;
   if (!digits || *end != '\0' || n < 1 || n > 1000000000)
      VG_(fmsg_bad_option)(arg, "--tier-threshold takes a whole number of runs from 1 to 1000000000\n");
   return (UInt)n;
}

// "--tiering=no|levels|yes".
Tiering parse_tiering(const HChar* arg, const HChar* value)
{
   if (VG_STREQ(value, "no")) return kTieringNo;
   if (VG_STREQ(value, "levels")) return kTieringLevels;
   if (!VG_STREQ(value, "yes")) VG_(fmsg_bad_option)(arg, "--tiering takes no, levels or yes\n");
   // Tier 1's pop is the x86-64 rule (SP just above the pushed return
   // address); arm64's returns are matched by their link address.
#if defined(VGA_arm64)
   VG_(fmsg_bad_option)(arg, "--tiering=yes is not available on arm64 yet\n");
#endif
   return kTieringYes;
}

// "--inline-levels=frames|records": whether runs of inlined code count in
// records (True) or with level frames.
Bool parse_inline_levels(const HChar* arg, const HChar* value)
{
   if (VG_STREQ(value, "frames")) return False;
   if (!VG_STREQ(value, "records")) VG_(fmsg_bad_option)(arg, "--inline-levels takes frames or records\n");
   return True;
}

// "--collect-systime=no|yes|msec|usec|nsec" (yes: msec), as callgrind's.
void parse_systime(const HChar* arg, const HChar* value)
{
   if (VG_STREQ(value, "no")) clo.collect_systime = kSysTimeNo;
   else if (VG_STREQ(value, "yes") || VG_STREQ(value, "msec")) clo.collect_systime = kSysTimeMsec;
   else if (VG_STREQ(value, "usec")) clo.collect_systime = kSysTimeUsec;
   else if (VG_STREQ(value, "nsec")) clo.collect_systime = kSysTimeNsec;
   else VG_(fmsg_bad_option)(arg, "--collect-systime takes no, yes, msec, usec or nsec\n");
}

} // namespace

Bool process_option(const HChar* arg)
{
   const HChar* value;
   if VG_STR_CLO(arg, "--kgrind-out-file", clo.out_file) {
      if (clo.out_file[0] == '\0')
         VG_(fmsg_bad_option)(arg, "the output file name is empty\n");
   }
   else if VG_STR_CLO(arg, "--k", value) { clo.k = parse_k(arg, "--k", value); clo.k_given = True; }
   else if VG_STR_CLO(arg, "--view-k", value) {
      clo.view_k = parse_k(arg, "--view-k", value);
      clo.view_k_given = True;
   }
   else if VG_STR_CLO(arg, "--mode", value) {
      if (VG_STREQ(value, "func")) clo.mode = kModeFunc;
      else if (VG_STREQ(value, "intra")) clo.mode = kModeIntra;
      else if (VG_STREQ(value, "inter")) clo.mode = kModeInter;
      else VG_(fmsg_bad_option)(arg, "--mode takes func, intra or inter\n");
   }
   else if VG_BOOL_CLO(arg, "--roll-loops", clo.roll_loops) {}
   else if VG_STR_CLO(arg, "--dump-blocks", clo.dump_blocks) {
      if (clo.dump_blocks[0] == '\0') VG_(fmsg_bad_option)(arg, "the dump file name is empty\n");
   }
   else if VG_STR_CLO(arg, "--funcs", value) parse_funcs(arg, value);
   else if VG_STR_CLO(arg, "--fn-skip", value) {
      if (value[0] == '\0') VG_(fmsg_bad_option)(arg, "--fn-skip needs a function name or pattern\n");
      add_func_pattern(arg, "--fn-skip", value, True);
   }
   else if VG_BOOL_CLO(arg, "--cache-sim", clo.cache_sim) {}
   else if VG_BOOL_CLO(arg, "--branch-sim", clo.branch_sim) {}
   else if VG_BOOL_CLO(arg, "--collect-bus", clo.collect_bus) {}
   else if VG_BOOL_CLO(arg, "--collect-data", clo.collect_data) {}
   else if VG_STR_CLO(arg, "--collect-systime", value) parse_systime(arg, value);
   else if VG_STR_CLO(arg, "--I1", value) parse_cache(arg, "--I1", value, &clo.i1);
   else if VG_STR_CLO(arg, "--D1", value) parse_cache(arg, "--D1", value, &clo.d1);
   else if VG_STR_CLO(arg, "--LL", value) parse_cache(arg, "--LL", value, &clo.ll);
   else if VG_BOOL_CLO(arg, "--join-threads", clo.join_threads) {}
   else if VG_BOOL_CLO(arg, "--separate-threads", clo.separate_threads) {}
   else if VG_BOOL_CLO(arg, "--unroll-simple-rec", clo.unroll_simple_rec) {}
   else if VG_BOOL_CLO(arg, "--dump-instr", clo.dump_instr) clo.dump_instr_given = True;
   else if VG_BOOL_CLO(arg, "--collect-jumps", clo.collect_jumps) clo.collect_jumps_given = True;
   else if VG_BOOL_CLO(arg, "--inline-frames", clo.inline_frames) clo.inline_frames_given = True;
   else if VG_STR_CLO(arg, "--inline-levels", value) {
      clo.inline_records = parse_inline_levels(arg, value);
      clo.inline_levels_given = True;
   }
   else if VG_STR_CLO(arg, "--tiering", value) clo.tiering = parse_tiering(arg, value);
   else if VG_STR_CLO(arg, "--tier-threshold", value) clo.tier_threshold = parse_tier_threshold(arg, value);
   else if (VG_STREQN(9, arg, "--kgrind-")) {
      // The core's message would only say "Unrecognised option"; name ours.
      VG_(fmsg_bad_option)(arg, "unknown kgrind option (see --help)\n");
   }
   else {
      return False;
   }
   return True;
}

// After option parsing VG_(fmsg_bad_option) only prints: exit ourselves.
#define KG_BAD_COMBINATION(opt, ...) \
   do { VG_(fmsg_bad_option)(opt, __VA_ARGS__); VG_(exit)(1); } while (0)

// The body's context depth: what --view-k says, or 2 when k is inf or a
// multiple of 2 (the k-SF keeps the whole k), else k; with events beyond
// Ir, k: the counters' contexts are then the k-SF's nodes, whose records
// carry the events (docs/design/events.md). A view context must follow
// from the k-context and its depth in the forest: view_k divides k.
void check_view_k()
{
   if (!clo.view_k_given) {
      Bool halves = clo.k == kInfiniteK || (clo.k > 2 && clo.k % 2 == 0);
      clo.view_k = block_mode() || !halves || events_asked() ? clo.k : 2;
      return;
   }
   if (block_mode() && clo.view_k != clo.k)
      KG_BAD_COMBINATION("--view-k", "--view-k applies to function mode only (--mode=func)\n");
   if (clo.k == kInfiniteK || clo.view_k == 0) return;
   if (clo.view_k == kInfiniteK || clo.view_k > clo.k)
      KG_BAD_COMBINATION("--view-k", "--view-k must not exceed --k\n");
   if (clo.k % clo.view_k != 0)
      KG_BAD_COMBINATION("--view-k", "--view-k must divide --k (or --k=inf): %u does not divide %u\n",
                         clo.view_k, clo.k);
}

// The body's positions (callgrind's --dump-instr and --collect-jumps). The
// block modes count per instruction anyway: instruction positions always,
// jumps unless --collect-jumps=no. Without --dump-instr jumps go from line
// to line, as callgrind's.
void check_positions()
{
   if (block_mode()) {
      if (clo.dump_instr_given && !clo.dump_instr)
         KG_BAD_COMBINATION("--dump-instr=no", "the block modes (--mode=intra|inter) always write "
                            "instruction positions: drop --dump-instr=no\n");
      clo.dump_instr = True;
      if (!clo.collect_jumps_given) clo.collect_jumps = True;
   }
   // Jumps at line level (positions: line) count per instruction all the
   // same: each exit's counter gives its jump's count.
   clo.count_instr = clo.dump_instr || clo.collect_jumps;
}

// The events beyond Ir: function mode (per line or per instruction).
void check_events()
{
   const HChar* opt = clo.cache_sim ? "--cache-sim=yes" : clo.branch_sim ? "--branch-sim=yes"
                    : clo.collect_bus ? "--collect-bus=yes" : clo.collect_data ? "--collect-data=yes"
                    : clo.collect_systime ? "--collect-systime" : nullptr;
   const HChar* geometry = clo.i1.given ? "--I1" : clo.d1.given ? "--D1" : clo.ll.given ? "--LL" : nullptr;
   if (geometry && !clo.cache_sim)
      KG_BAD_COMBINATION(geometry, "%s sets a cache of --cache-sim=yes: add --cache-sim=yes or drop %s\n",
                         geometry, geometry);
   if (!opt) return;
   if (block_mode()) KG_BAD_COMBINATION(opt, "%s needs function mode (--mode=func)\n", opt);
   if (clo.collect_jumps)
      KG_BAD_COMBINATION(opt, "%s with --collect-jumps=yes is not implemented yet: drop one of them\n", opt);
}

// Inlined functions as context levels: by default wherever they can be,
// function mode without --collect-jumps=yes and with the core's inline
// records (--read-inline-info); elsewhere the default means physical
// frames, and an explicit --inline-frames=yes is an error.
void check_inline_frames()
{
   const HChar* opt = "--inline-frames=yes";
   const HChar* why = block_mode() ? "the block modes (--mode=intra|inter) count physical frames"
                    : clo.collect_jumps ? "--collect-jumps=yes counts jumps between physical frames"
                    : !VG_(clo_read_inline_info) ? "--read-inline-info=no leaves out the inline records"
                    : nullptr;
   if (!clo.inline_frames || !why) return;
   if (clo.inline_frames_given) KG_BAD_COMBINATION(opt, "%s cannot apply: %s; drop one of them\n", opt, why);
   clo.inline_frames = False;
}

// --tiering=yes gives every block a tier-1 twin of its prologue, made for
// physical frames with Ir alone (levels and events have helpers of their
// own, and --tiering=levels tiers the levels' steps).
void check_tiering()
{
   if (clo.tiering != kTieringYes) return;
   const HChar* why = block_mode() ? "the block modes (--mode=intra|inter) have helpers of their own"
                    : clo.inline_frames ? "inlined levels are tiered by --tiering=levels (add --inline-frames=no)"
                    : (clo.cache_sim || clo.branch_sim || clo.collect_bus || clo.collect_data || clo.collect_systime)
                       ? "events beyond Ir are counted at tier 2 only"
                       : nullptr;
   if (why) KG_BAD_COMBINATION("--tiering=yes", "--tiering=yes tiers physical frames counting Ir only: %s\n", why);
}

// --inline-levels=records: by default at a finite --k wherever there are
// inlined levels (the profile is the level frames' either way), but with
// --tiering=yes (which tiers physical frames) and on arm64 level frames;
// an explicit --inline-levels=records there is an error. At --k=inf only
// when asked for: a record per calling context costs programs whose
// inlined code is libc's, called from everywhere, more than it saves
// (docs/design/performance.md, "Inlined levels without frames").
void check_inline_levels()
{
   if (!clo.inline_records) return;
   if (clo.k == kInfiniteK && !clo.inline_levels_given) {
      clo.inline_records = False;
      return;
   }
#if defined(VGA_arm64)
   const Bool on_arm64 = True;
#else
   const Bool on_arm64 = False;
#endif
   const HChar* opt = "--inline-levels=records";
   const HChar* why = !clo.inline_frames ? "there are no inlined levels (--inline-frames=no, or a mode without them)"
                    : clo.tiering == kTieringYes ? "--tiering=yes tiers physical frames only"
                    : on_arm64 ? "it is not available on arm64 yet (a return's pop there is the link register's)"
                    : nullptr;
   if (!why) return;
   if (clo.inline_levels_given) KG_BAD_COMBINATION(opt, "%s cannot apply: %s\n", opt, why);
   clo.inline_records = False;
}

void check_options()
{
   if (clo.roll_loops && clo.mode == kModeFunc)
      KG_BAD_COMBINATION("--roll-loops=yes",
                           "--roll-loops needs a basic-block mode (--mode=intra or --mode=inter)\n");
   if (clo.roll_loops) {
      if (clo.k_given && clo.k != kInfiniteK)
         KG_BAD_COMBINATION("--roll-loops=yes",
                              "--roll-loops=yes implies --k=inf; drop --k or use --roll-loops=no\n");
      clo.k = kInfiniteK;
   } else if (block_mode() && clo.k == kInfiniteK) {
      KG_BAD_COMBINATION("--k=inf", "--k=inf in a basic-block mode needs --roll-loops=yes "
                           "(without it the block k-SF grows with every block run)\n");
   }
   check_view_k();
   check_positions();
   check_events();
   check_inline_frames();
   check_inline_levels();
   check_tiering();
}

void print_usage()
{
   VG_(printf)(
"    --k=<n|inf>               calling-context depth: callers kept per context [2]\n"
"                              (0 = vertex profile, 1 = edge profile, inf = CCT)\n"
"    --view-k=<n|inf>          callers in the contexts of the callgrind body, which\n"
"                              has per-line costs (KCachegrind, callgrind_annotate);\n"
"                              the k-SF records keep --k [2 if k is inf or even,\n"
"                              else k; k with events beyond Ir]\n"
"    --mode=func|intra|inter   k-SF labels: functions, basic blocks per function\n"
"                              (intra), or basic blocks of the whole thread [func]\n"
"    --roll-loops=no|yes       block modes: a block already on the current path\n"
"                              is counted there (loops rolled); implies --k=inf [no]\n"
"    --funcs=<glob>[,<glob>]   trace only matching functions (demangled names,\n"
"                              * and ? wildcards; !<glob> excludes); others pass\n"
"                              their cost to the nearest traced caller [all;\n"
"                              block modes: the functions of the main executable]\n"
"    --fn-skip=<glob>          as callgrind's: matching functions are not traced,\n"
"                              their cost goes to their caller (as --funcs='!<glob>')\n"
"    --join-threads=no|yes     one forest for all threads [no]\n"
"    --separate-threads=no|yes one file a thread, <file>-<thread> (callgrind's\n"
"                              names), each with its thread's records [no]\n"
"    --dump-instr=no|yes       per-instruction costs in the callgrind body\n"
"                              (positions: instr line), as callgrind's option\n"
"                              [no; block modes: always yes]\n"
"    --collect-jumps=no|yes    jump=/jcnd= lines (jumps and conditional jumps per\n"
"                              context), from line to line, or between instructions\n"
"                              with --dump-instr=yes [no; block modes: yes]\n"
"    --cache-sim=no|yes        simulate I1, D1 and LL caches: events Dr Dw I1mr\n"
"                              D1mr D1mw ILmr DLmr DLmw after Ir [no]\n"
"    --I1=<size>,<assoc>,<line size>  I1 cache geometry [the host's]\n"
"    --D1=<size>,<assoc>,<line size>  D1 cache geometry [the host's]\n"
"    --LL=<size>,<assoc>,<line size>  last-level cache geometry [the host's]\n"
"    --branch-sim=no|yes       simulate branch predictors: events Bc Bcm Bi Bim [no]\n"
"    --collect-bus=no|yes      count atomic instructions: event Ge [no]\n"
"    --collect-data=no|yes     count data reads and writes without simulating the\n"
"                              caches: events Dr Dw (--cache-sim=yes has them) [no]\n"
"    --collect-systime=no|yes|msec|usec|nsec  count system calls and their elapsed\n"
"                              time: events sysCount sysTime (in milliseconds for\n"
"                              yes and msec), and sysCpuTime with nsec [no]\n"
"    --inline-frames=yes|no    inlined functions as context levels (`f [inlined]`),\n"
"                              where the debug info has inline records [yes in\n"
"                              function mode; no (physical frames) in the block\n"
"                              modes and with --collect-jumps=yes]\n"
"    --inline-levels=frames|records  how inlined levels are counted: frames, a shadow\n"
"                              stack frame each; records, per physical context,\n"
"                              the levels' numbers derived when a profile is\n"
"                              written (the same profile; faster on inlined C++)\n"
"                              [records at a finite --k where there are levels,\n"
"                              but frames with --tiering=yes; frames at --k=inf]\n"
"    --unroll-simple-rec=no|yes  keep each level of simple recursion [no: rolled]\n"
"    --tiering=no|levels|yes   translate a block cheaply until it has run\n"
"                              --tier-threshold times, then with the inline fast\n"
"                              path; the counts are the same either way. levels:\n"
"                              blocks that step inlined levels as frames (their\n"
"                              steps in a helper at first, and for good in blocks\n"
"                              that call it less than once in 8 runs); yes: every\n"
"                              block (a helper call; needs --inline-frames=no)\n"
"                              [levels]\n"
"    --tier-threshold=<n>      a block's runs before its fast translation [1000]\n"
"    --kgrind-out-file=<file>  output file name [kgrind.out.%%p]\n"
"                              (%%p is the pid, %%q{VAR} an environment variable)\n"
   );
}

void print_debug_usage()
{
   VG_(printf)(
"    --dump-blocks=<file>      block modes: write every traced block run, with its\n"
"                              thread and activation, to <file> (%%p: pid)\n");
}

Bool name_is_traced(const HChar* name, Bool by_default)
{
   Bool included = by_default, excluded = False;
   for (UInt i = 0; i < clo.n_func_patterns; i++)
      if (!clo.func_excluded[i]) included = False;   // --funcs lists what is traced
   for (UInt i = 0; i < clo.n_func_patterns; i++) {
      if (!VG_(string_match)(clo.func_patterns[i], name)) continue;
      pattern_matched[i] = True;
      if (clo.func_excluded[i]) excluded = True;
      else included = True;
   }
   return included && !excluded;
}

UInt unmatched_patterns(UInt* out, UInt max)
{
   UInt n = 0;
   for (UInt i = 0; i < clo.n_func_patterns && n < max; i++)
      if (!pattern_matched[i]) out[n++] = i;
   return n;
}

} // namespace kg
