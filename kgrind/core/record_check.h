// kgrind core: the checks of one thread's k-SF records that the writer makes
// as it writes them, the numbers kgrind_annotate checks on reading
// (perl/lib/KGrind/Check/Forest.pm, check_counters): every node's inclusive
// Ir is at least its exclusive Ir, the nodes' exclusive Ir sums to the
// thread's ir=, and in function mode the inclusive Ir of __root__ (the
// first node) is ir=. A profile failing them is one the reader refuses: the
// tool warns instead of leaving it to be found there. Freestanding,
// header-only; O(1) a node.
#pragma once
#include <stdint.h>

namespace kg {
namespace core {

class RecordCheck {
public:
  // The next node written (numbered from 0 in the order written, as the
  // reader numbers a thread's nodes).
  void node(uint64_t incl, uint64_t excl) {
    if (nodes_ == 0) root_incl_ = incl;
    if (incl < excl) {
      if (below_ == 0) {
        first_below_ = nodes_;
        first_incl_ = incl;
        first_excl_ = excl;
      }
      below_++;
    }
    excl_sum_ += excl;
    nodes_++;
  }

  // After the thread's last node: whether its sums agree with ir (the
  // thread's ir=; root_is_ir: function mode, whose root is __root__).
  void finish(uint64_t ir, bool root_is_ir) {
    sums_off_ = excl_sum_ != ir || (root_is_ir && nodes_ && root_incl_ != ir);
  }

  bool consistent() const { return below_ == 0 && !sums_off_; }
  // Nodes whose inclusive Ir is below their exclusive Ir; the first of
  // them, with its two costs.
  uint64_t below() const { return below_; }
  uint64_t first_below() const { return first_below_; }
  uint64_t first_incl() const { return first_incl_; }
  uint64_t first_excl() const { return first_excl_; }
  // The sums (after finish): the nodes' exclusive Ir, the root's inclusive.
  bool sums_off() const { return sums_off_; }
  uint64_t excl_sum() const { return excl_sum_; }
  uint64_t root_incl() const { return root_incl_; }

private:
  uint64_t nodes_ = 0, below_ = 0, first_below_ = 0, first_incl_ = 0, first_excl_ = 0;
  uint64_t excl_sum_ = 0, root_incl_ = 0;
  bool sums_off_ = false;
};

}  // namespace core
}  // namespace kg
