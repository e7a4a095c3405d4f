#include "kg_block_info.h"
#include "kg_array_ops.h"
#include "kg_options.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

// Every BlockInfo, by id (translations are rare: a list costs nothing on
// the hot path).
static BlockInfo** all_blocks;
static UWord n_blocks, blocks_cap;

BlockEvents** block_events;
UWord block_events_cap;

static void remember_block(BlockInfo* b)
{
   append(all_blocks, n_blocks, blocks_cap, b, 4096, "kg.blocks");
   b->id = (UInt)n_blocks;
   tl_assert(b->id == n_blocks);
}

void set_block_events(const BlockInfo* blk, const EventSlot* slots, UInt n_inline, UInt n_miss,
                      const PointEvent* by_point, UInt n_by_point)
{
   if (blk->id >= block_events_cap) {
      UWord cap = block_events_cap ? 2 * block_events_cap : 4096;
      while (cap <= blk->id) cap *= 2;
      BlockEvents** bigger = (BlockEvents**)alloc_zeroed(cap * sizeof(BlockEvents*), "kg.events");
      if (block_events) VG_(memcpy)(bigger, block_events, block_events_cap * sizeof(BlockEvents*));
      kg::release(block_events);
      block_events = bigger;
      block_events_cap = cap;
   }
   UInt n = n_inline + n_miss;
   if (!n && !n_by_point) return;
   tl_assert(n_inline <= 0xFFFF && n_miss <= 0xFFFF);
   SizeT slots_bytes = (sizeof(BlockEvents) + n * sizeof(EventSlot) + 7) & ~(SizeT)7;
   BlockEvents* e = (BlockEvents*)alloc_permanent(slots_bytes + n_by_point * sizeof(PointEvent));
   e->n_inline = (UShort)n_inline;
   e->n_miss = (UShort)n_miss;
   VG_(memcpy)(e->slots, slots, n * sizeof(EventSlot));
   e->n_by_point = n_by_point;
   PointEvent* points = (PointEvent*)((UChar*)e + slots_bytes);
   VG_(memcpy)(points, by_point, n_by_point * sizeof(PointEvent));
   e->by_point = points;
   block_events[blk->id] = e;
}

BlockInfo* block_with_id(UInt id) { return all_blocks[id - 1]; }
UWord block_info_count() { return n_blocks; }

static SizeT block_info_bytes(UInt n_lines, UInt tail_bytes)
{
   return sizeof(BlockInfo) + n_lines * sizeof(SourceLine*) + tail_bytes;
}

BlockInfo* block_info_new(Addr addr, UInt n_lines, SourceLine** lines, UInt tail_bytes)
{
   tl_assert(n_lines > 0);   // every superblock has an instruction: fn() is its first line's
   BlockInfo* b = (BlockInfo*)alloc_permanent(block_info_bytes(n_lines, tail_bytes));
   remember_block(b);
   b->addr = addr;
   b->array_offset = kNoArrayOffset;
   b->n_slots = (UShort)n_lines;
   b->n_lines = (UShort)n_lines;
   SourceLine** after = (SourceLine**)(b + 1);
   for (UInt i = 0; i < n_lines; i++) after[i] = lines[i];
   return b;
}

struct PositionBlock {
   const void* a;     // the address
   const void* b;     // unused
   BlockInfo* blk;
};
static PairTable<PositionBlock, 16> position_blocks;

BlockInfo* position_block(Addr at)
{
   PositionBlock* e = position_blocks.get((const void*)at, nullptr);
   if (e->blk) return e->blk;
   SourceLoc loc;
   source_loc(at, &loc);
   SourceLine* line = source_line(loc);
   // Per-instruction positions (the block modes: always), or per line.
   BlockInfo* b = block_info_new(at, 1, &line, clo.count_instr ? sizeof(InstrPos) + sizeof(FlushPoint) : sizeof(LineRun));
   if (clo.count_instr) {
      b->n_instrs = 1;
      *b->instrs() = { at, line, 0, 0, False };
      *b->points() = { 0, 0 };
   } else {
      b->n_runs = 1;
      *b->runs() = { 0, 0, 1 };
   }
   e->blk = b;
   return b;
}

void block_info_trim_runs(BlockInfo* blk, UInt n_runs)
{
   tl_assert(n_runs <= blk->n_runs);
   shrink_permanent(blk, block_info_bytes(blk->n_lines, blk->n_runs * sizeof(LineRun)),
                    block_info_bytes(blk->n_lines, n_runs * sizeof(LineRun)));
   blk->n_runs = (UShort)n_runs;
}

} // namespace kg
