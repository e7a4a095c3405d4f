// The writer's checks of a thread's k-SF records (kgrind/core/record_check.h):
// what kgrind_annotate refuses (Check/Forest.pm, check_counters) is found,
// with the node numbered as the reader numbers it.
#include <gtest/gtest.h>

#include "kgrind/core/record_check.h"

using namespace kg::core;

// __root__ (incl 100) > a (excl 30, incl 70) > b (excl 40, incl 40): ir 100.
static void consistent_thread(RecordCheck& c) {
  c.node(100, 30);
  c.node(70, 30);
  c.node(40, 40);
}

TEST(RecordCheck, ConsistentRecordsPass) {
  RecordCheck c;
  consistent_thread(c);
  c.finish(100, true);
  EXPECT_TRUE(c.consistent());
  EXPECT_EQ(c.below(), 0u);
  EXPECT_FALSE(c.sums_off());
}

TEST(RecordCheck, AnEmptyThreadWithNoIrPasses) {
  RecordCheck c;
  c.finish(0, true);
  EXPECT_TRUE(c.consistent());
}

TEST(RecordCheck, InclusiveBelowExclusiveNamesTheFirstNode) {
  RecordCheck c;
  c.node(150, 0);
  c.node(96, 44);
  c.node(52, 96);   // node 2: what the reader refuses first
  c.node(10, 8);
  c.node(0, 0);
  c.node(1, 2);     // another
  c.finish(150, true);
  EXPECT_FALSE(c.consistent());
  EXPECT_EQ(c.below(), 2u);
  EXPECT_EQ(c.first_below(), 2u);
  EXPECT_EQ(c.first_incl(), 52u);
  EXPECT_EQ(c.first_excl(), 96u);
  EXPECT_FALSE(c.sums_off());   // 0 + 44 + 96 + 8 + 0 + 2 = 150
}

TEST(RecordCheck, ExclusiveSumOtherThanIrIsFound) {
  RecordCheck c;
  consistent_thread(c);
  c.finish(101, false);
  EXPECT_FALSE(c.consistent());
  EXPECT_TRUE(c.sums_off());
  EXPECT_EQ(c.excl_sum(), 100u);
  EXPECT_EQ(c.below(), 0u);
}

TEST(RecordCheck, RootInclusiveOtherThanIrIsFoundInFunctionMode) {
  RecordCheck c;
  c.node(90, 30);   // __root__
  c.node(70, 30);
  c.node(40, 40);
  c.finish(100, true);
  EXPECT_TRUE(c.sums_off());
  EXPECT_EQ(c.root_incl(), 90u);
  RecordCheck blocks;   // a block forest's first node is no __root__
  blocks.node(90, 30);
  blocks.node(70, 30);
  blocks.node(40, 40);
  blocks.finish(100, false);
  EXPECT_TRUE(blocks.consistent());
}
