// Tiered instrumentation: a superblock's first translation is cheap to
// make (tier 1: its prologue and its return are helper calls, the C twins
// of the inline code), and one that has run --tier-threshold times (at the
// levels' tier: and called the levels' helper often) is translated again
// with the inline fast path (tier 2). The tiers count in
// the same counters, frames and transitions (docs/design/tiers.md).
#pragma once
#include "kg_block_info.h"

namespace kg {

// The guest state as tier 1's helper reads and writes it.
#if defined(VGA_amd64)
using GuestState = VexGuestAMD64State;
inline Addr guest_sp(const GuestState* g) { return g->guest_RSP; }
#elif defined(VGA_arm64)
using GuestState = VexGuestARM64State;
inline Addr guest_sp(const GuestState* g) { return g->guest_XSP; }
#endif

// How a tier-1 block's helper starts it: the C twin of the prologue tier 2
// gives it (instrument/prologue.cpp, add_prologue).
enum TierStart : UWord {
   kTierPlain = 0,         // kg_block_start when its context is not way 0's
   kTierAlways = 1,        // an untraced function's first block: kg_block_start
   kTierEntry = 2,         // a traced function's first block: the speculative push
   kTierCalledEntry = 3,   // a direct call's target without a symbol: the predicted push
};

// Whether superblocks start at tier 1 in this run: --tiering=yes in function
// mode without events beyond Ir and inlined levels (those run at tier 2
// from the start).
Bool tiering_on();
// Whether superblocks that step inlined levels start at tier 1, their
// steps left to the levels' helper (kg_inline_enter), until they have run
// the threshold's times and called it once in kLevelHelperShare runs at
// least: --tiering=levels with inlined levels, in function
// mode without events beyond Ir (with events the helper steps every
// level).
Bool level_tiering_on();
// Whether the superblock at addr has reached the threshold: translated at
// tier 2 from now on.
Bool tier_promoted(Addr addr);
// A level tier-1 superblock's counts (never moved or freed). Its IR
// increments `runs` at each run and promotes the block at the run that
// makes it kLevelPromotionRun; the levels' helpers count their calls
// (level_tier_helper_called) and set `runs` so that the next run promotes
// once the block is hot and needs them: the inline steps cost a block at
// every run, taken or not, and a block that stays in one level needs none
// (numeric's hot loops, inlined into main, ran 2x slower promoted by runs
// alone). The share was not tuned: the blocks of cppvirt, numeric,
// callheavy and sqlite3 call the helper at nearly every run or nearly
// never, and shares of 2, 8 and 32 promote the same ones.
struct LevelTierCounts {
   UInt runs;
   UInt helper_calls;
   UInt start_calls;         // of helper_calls, at the superblock's start
   UInt runs_at_promotion;
};
const UInt kLevelPromotionRun = 0x80000000u;
const UInt kLevelHelperShare = 8;
// A superblock that steps levels was translated at tier 1 (its counts), or
// at tier 2.
LevelTierCounts* level_tier_one_made();
void level_tier_two_made();
// A level tier-1 superblock (c; nullptr at tier 2) called a levels' helper,
// at its first run (at_start) or a later one.
void level_tier_helper_called(LevelTierCounts* c, Bool at_start);
// Whether the superblock at addr steps levels inline at its start when it
// steps them inline (at tier 2): not when it was promoted from the levels'
// tier with a start that called the helper less than once in
// kLevelHelperShare runs, where the steps would cost every run and seldom
// be taken.
Bool level_start_steps_inline(Addr addr);
// A block was translated at tier 1 (its runs start at 0), or at tier 2.
void tier_one_made(const BlockInfo* blk);
void tier_two_made();
// --stats=yes: translations per tier, promotions, tier-1 runs.
void print_tier_stats();

extern "C" {
// A tier-1 block's start: its counters in the context it runs in, or
// nullptr when it has run the threshold's times (promoted: the block
// leaves before its first instruction, its translations are discarded and
// it runs again at tier 2).
// gs: the guest state, whose SP it reads and which names the range to
// discard when it promotes.
ULong* VG_REGPARM(3) kg_tier_block(GuestState* gs, BlockInfo* blk, UWord start);
// The run of a tier-1 block that steps levels after the helper's call that
// made it hot (level_tier_helper_called), before the block does anything:
// promotes it, with its start's steps inline or not (c: its counts).
void VG_REGPARM(2) kg_levels_promote(BlockInfo* blk, LevelTierCounts* c);
// A tier-1 block ending in a return: the inline pop's C twin
// (instrument/frames_ir.cpp, add_inline_return).
void VG_REGPARM(1) kg_tier_return(Addr sp);
}

} // namespace kg
